// What `up` learns of its mockers from their workers' discovery records once they are ready: each
// worker's raw (and replay) endpoints and its own OpenAI API URL, and the ports a mocker picked
// itself (0 in the plan) as it bound them, for the ready summary and the state file.
import { keys } from "../../discovery/keys.ts";
import type { DiscoveryStore } from "../../discovery/store.ts";
import { checkRecord, WorkerRecordSchema } from "../../protocol/records.ts";
import type { StackProcess } from "./start.ts";

/** Each mocker's raw (and replay) endpoints and worker API URLs, from its workers' records (ports it picked itself when given 0). */
export async function addWorkerEndpoints(store: DiscoveryStore, config: { namespace: string; modelName: string }, processes: StackProcess[]): Promise<void> {
  const byPort = new Map<string, { raw: string[][]; replay: string[][]; api: string[] }>();
  for (const entry of await store.list(keys.kindPrefix(config.namespace, "worker"))) {
    const r = checkRecord(WorkerRecordSchema, entry.value);
    if (!r.ok || r.value.model !== config.modelName) continue;
    const port = new URL(r.value.request_url).port;
    const found = byPort.get(port) ?? { raw: [], replay: [], api: [] };
    found.raw[r.value.worker_index] = r.value.raw_endpoints;
    if (r.value.replay_endpoints) found.replay[r.value.worker_index] = r.value.replay_endpoints;
    if (r.value.openai_url) found.api[r.value.worker_index] = r.value.openai_url;
    byPort.set(port, found);
  }
  for (const p of processes) {
    if (p.role !== "mocker") continue;
    const found = byPort.get(String(p.ports.http));
    if (!found) continue;
    p.rawEndpoints = found.raw;
    if (found.replay.length > 0) p.replayEndpoints = found.replay;
    if (found.api.length > 0) p.workerApiUrls = found.api;
    // Ports as bound, each worker's first rank's endpoint: what the mocker picked for a 0 in the
    // plan, and again after a restart (which picks anew), whatever an earlier read filled in.
    const bound = (planned: number | number[] | undefined, endpoints: string[][]) =>
      Array.isArray(planned) ? planned.map((port, j) => endpointPort(endpoints[j]?.[0]) || port) : planned;
    p.ports = {
      ...p.ports,
      ...(p.ports.zmqKvEvents !== undefined ? { zmqKvEvents: bound(p.ports.zmqKvEvents, found.raw)! } : {}),
      ...(p.ports.zmqReplay !== undefined ? { zmqReplay: bound(p.ports.zmqReplay, found.replay)! } : {}),
      ...(p.ports.openai !== undefined ? { openai: bound(p.ports.openai, found.api.map((url) => [url]))! } : {}),
    };
  }
}

function endpointPort(endpoint: string | undefined): number {
  return Number(/:(\d+)\/?$/.exec(endpoint ?? "")?.[1] ?? 0);
}
