// The workers' own API URLs as a router's command names them (`--frontend-cmd` placeholders): all
// of them, or by their disaggregated side, and the prefill processes' transfer ports beside their
// workers; whether naming them turns the worker API on, and when they cannot be named.
import { mockerSideOf, prefillProcesses } from "../../config/pd-layout.ts";
import { parseRoles, type UpConfig } from "../../config/up.ts";
import { PD_URL_PLACEHOLDERS, placeholdersIn, WORKER_URL_PLACEHOLDERS } from "./template.ts";

/** Whether the workers serve their own API: --worker-api, or a frontend command naming their URLs. */
export function workerApiWanted(config: Pick<UpConfig, "workerApi" | "frontendCmd">): boolean {
  return config.workerApi || (config.frontendCmd !== undefined && usesWorkerUrls(config.frontendCmd));
}

function usesWorkerUrls(template: string): boolean {
  const used = placeholdersIn(template);
  return WORKER_URL_PLACEHOLDERS.some((n) => used.has(n));
}

/** The ports up picked that these name (plan.ts's ChosenPorts). */
interface PickedPorts {
  workerApi?: number[];
  kvTransfer?: number[];
  /** The first raw KV-event port; global rank k (worker × dp + rank) publishes on it + k. */
  rawBase?: number;
}

/** Workers first..first+count-1's API ports as up picked them (0, the mocker picks, when up picked none: a plan without start-up). */
export function workerApiPortsOf(ports: PickedPorts, first: number, count: number): number[] {
  return Array.from({ length: count }, (_, j) => ports.workerApi?.[first + j] ?? 0);
}

/** The placeholders' values: URLs (a list, or one comma-separated word), by side, and URL + transfer port pairs. */
export function workerUrlValues(config: UpConfig, ports: PickedPorts, host: string): Record<string, string | readonly (string | readonly string[])[]> {
  const urls = (ports.workerApi ?? []).map((p) => `http://${host}:${p}`);
  // Global worker k is in process floor(k / W), whose side is its process's.
  const processOf = (k: number) => Math.floor(k / config.workersPerProcess);
  const side = (k: number) => mockerSideOf(config, processOf(k));
  return {
    worker_api_urls: urls,
    worker_api_urls_csv: urls.join(","),
    prefill_api_urls: urls.filter((_, k) => side(k) === "prefill"),
    decode_api_urls: urls.filter((_, k) => side(k) === "decode"),
    prefill_bootstrap: urls.flatMap((url, k) => (side(k) === "prefill" ? [[url, String(ports.kvTransfer?.[processOf(k)] ?? "")]] : [])),
    worker_kv_event_sources: urls.map((url, k) => `${url}=${rawEndpoints(ports, config, host, k).join(",")}`),
  };
}

/** Global worker k's ranks' raw PUB endpoints, from the base up picked (or --zmq-kv-events-ports). */
function rawEndpoints(ports: PickedPorts, config: UpConfig, host: string, k: number): string[] {
  const base = config.zmqKvEventsPorts || ports.rawBase;
  if (!base) return [];
  return Array.from({ length: config.dataParallelSize }, (_, r) => `tcp://${host}:${base + k * config.dataParallelSize + r}`);
}

/** Whether the frontend command names the workers' raw KV-event endpoints (up must fix those ports first). */
export function usesEventSources(config: Pick<UpConfig, "frontendCmd">): boolean {
  return config.frontendCmd !== undefined && placeholdersIn(config.frontendCmd).has("worker_kv_event_sources");
}

/** Why the frontend command cannot name the workers' URLs here, if it cannot. */
export function workerUrlProblems(config: UpConfig): string[] {
  const cmd = config.frontendCmd;
  if (cmd === undefined) return [];
  const problems: string[] = [];
  const pd = PD_URL_PLACEHOLDERS.filter((n) => placeholdersIn(cmd).has(n));
  if (pd.length > 0 && prefillProcesses(config) === undefined) problems.push(`--frontend-cmd: ${pd.map((n) => `{${n}}`).join(", ")} name a disaggregated stack's workers; give --prefill-workers and --decode-workers`);
  if (usesWorkerUrls(cmd) && !parseRoles(config.roles).roles.has("mockers")) {
    problems.push(`--frontend-cmd: the workers' URLs with --roles ${config.roles}: up starts no mockers here, so it knows no worker API ports; give the URLs in the command instead`);
  }
  if (usesWorkerUrls(cmd) && config.runtime === "dynamo") problems.push("--frontend-cmd: the workers' URLs with --runtime dynamo: Dynamo's workers serve its request plane, not an API of their own");
  if (config.mockerCmd !== undefined && usesWorkerUrls(cmd)) {
    problems.push(`--frontend-cmd: the workers' URLs (${WORKER_URL_PLACEHOLDERS.map((n) => `{${n}}`).join(", ")}) with --mocker-cmd: up cannot know the API ports of mockers it does not run; give the URLs in the command instead`);
  }
  return problems;
}
