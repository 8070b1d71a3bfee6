// What `up` reads from discovery around its children: the state agent's host record (a
// mockers-only `up` waits for it), CacheOwner ordinal clashes with intents already registered (refused
// before any mocker starts), and what each mocker's workers bound: raw and replay endpoints, their
// OpenAI API URLs, and the ports a mocker picked itself (0 in the plan), again after each restart.
import { globalWorkers, type UpConfig } from "../../config/up.ts";
import { keys } from "../../discovery/keys.ts";
import type { DiscoveryStore } from "../../discovery/store.ts";
import { KvcrError, ReadinessError } from "../../lib/errors.ts";
import { recordOwnerAlive } from "../../lib/process-alive.ts";
import { AgentHostRecordSchema, checkRecord, WorkerRecordSchema, type AgentHostRecord } from "../../protocol/records.ts";
import { refuseOrdinalClashes } from "../shared/stack/ordinal-clash.ts";

/** `up`'s config with its discovery namespace and directory resolved (stackDiscovery). */
export type ResolvedConfig = UpConfig & { namespace: string; discoveryDir: string };

/** A started process's ports and endpoints as the state file lists them (start.ts's StackProcess). */
export interface ProcessEndpoints {
  role: string;
  ports: Record<string, number | number[]>;
  rawEndpoints?: string[][];
  replayEndpoints?: string[][];
  /** Each worker's own OpenAI API URL (--worker-api), by worker index in the process. */
  workerApiUrls?: string[];
}

/** `up --roles mockers` in state-agent mode: the agent runs elsewhere; wait for its host record. */
export async function waitForAgentRecord(store: DiscoveryStore, config: ResolvedConfig, cancel: Promise<unknown> = new Promise(() => {})): Promise<AgentHostRecord> {
  let cancelled = false;
  void cancel.then(() => (cancelled = true));
  const deadline = performance.now() + config.agentReadyTimeout * 1000;
  const prefix = keys.kindPrefix(config.namespace, "agent");
  let lastProblem = "no agent record";
  for (;;) {
    for (const entry of await store.list(prefix)) {
      const r = checkRecord(AgentHostRecordSchema, entry.value);
      if (r.ok) return r.value;
      lastProblem = `${entry.key}: ${r.problem}`;
    }
    if (cancelled) throw new KvcrError("STACK_CANCELLED", "start-up cancelled");
    if (performance.now() >= deadline) {
      throw new ReadinessError(
        `no state agent registered in namespace ${config.namespace} within ${config.agentReadyTimeout} s (${lastProblem}; looked under ${prefix}): start the agent first (up --roles agent,...), or check --namespace and the discovery settings`,
      );
    }
    await Promise.race([Bun.sleep(Math.min(250, Math.max(0, deadline - performance.now()))), cancel]);
  }
}

/**
 * With several `up`s on one namespace, CacheOwner ordinal ranges must not overlap: an attachment
 * intent already in discovery for a ordinal this stack's mockers would own is refused before any
 * mocker starts, naming both owners.
 */
export async function refuseOrdinalOverlap(store: DiscoveryStore, config: ResolvedConfig): Promise<void> {
  const W = config.workersPerProcess * config.dataParallelSize;
  const first = BigInt(config.cacheSlotBase);
  const end = first + BigInt(globalWorkers(config) * config.dataParallelSize);
  await refuseOrdinalClashes(
    store,
    {
      namespace: config.namespace,
      ownerAlive: (owner) => recordOwnerAlive(config.discoveryBackend, owner),
      clash: ({ ordinal, workerId, dpRank, pid }) =>
        ordinal === undefined || ordinal < first || ordinal >= end
          ? undefined
          : `ordinal ${ordinal} is attached by worker ${String(workerId)} rank ${String(dpRank)} (pid ${pid}) and would be owned by this up's mocker-${(ordinal - first) / BigInt(W)}`,
    },
    (clashes) => `CacheOwner ordinals ${first}–${end - 1n} of this stack overlap ones already in discovery (namespace ${config.namespace}): ${clashes}. Choose another --cache-slot-base.`,
  );
}

/** Each mocker's raw (and replay) endpoints and worker API URLs, from its workers' records (ports it picked itself when given 0). */
export async function addWorkerEndpoints(store: DiscoveryStore, config: { namespace: string; modelName: string }, processes: ProcessEndpoints[]): Promise<void> {
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
