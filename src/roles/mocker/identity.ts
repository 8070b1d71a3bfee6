// Who each worker of a mocker process is: worker id, CacheOwner ids per rank (ordinal
// base + i × dp + r), raw topic, ports and endpoints. Pure: derived from the resolved config, so a
// restarted worker with the same flags gets the same ids and topic (so the agent gives it its slot back).
import { defaultOwnerParts, formatCacheOwner, rawTopic, type Hash64 } from "../../protocol/cache-owner.ts";
import type { MockerConfig } from "../../config/mocker.ts";

export interface WorkerIdentity {
  index: number;
  workerId: string;
  /** One per rank in state-agent mode; empty in direct mode. */
  cacheOwnerIds: string[];
  rawTopic: string;
  /** Requested raw PUB port per rank (0 = pick), undefined when no raw stream is published. */
  rawPorts: number[] | undefined;
  replayPorts: number[] | undefined;
}

/**
 * `processId` names this process's incarnation in direct mode (worker ids are `{processId}-{i}`);
 * state-agent workers are named by their first CacheOwner ordinal, which is stable across restarts.
 */
export function workerIdentities(config: MockerConfig, hash: Hash64, processId: string): WorkerIdentity[] {
  const dp = config.dataParallelSize;
  const owner = {
    ...defaultOwnerParts(hash, config.modelName, config.namespace),
    ...(config.kvStateAgentCacheSemantics ? { semantics: config.kvStateAgentCacheSemantics } : {}),
    ...(config.kvStateAgentRoutingScope ? { scope: config.kvStateAgentRoutingScope } : {}),
    ...(config.kvStateAgentDc ? { datacenter: config.kvStateAgentDc } : {}),
  };
  const ranksFrom = (base: number | undefined) => (base === undefined ? undefined : Array.from({ length: dp }, (_, r) => (base === 0 ? 0 : base + r)));
  return Array.from({ length: config.numWorkers }, (_, i) => {
    const cacheOwnerIds = config.kvStateAgent
      ? Array.from({ length: dp }, (_, r) => formatCacheOwner({ ...owner, ordinal: BigInt((config.kvStateAgentCacheSlot ?? 0) + i * dp + r) }))
      : [];
    return {
      index: i,
      workerId: config.kvStateAgent ? `kvcr-slot-${(config.kvStateAgentCacheSlot ?? 0) + i * dp}` : `${processId}-${i}`,
      cacheOwnerIds,
      rawTopic: config.kvStateAgent ? rawTopic(hash, cacheOwnerIds) : config.kvEventsTopic,
      rawPorts: ranksFrom(config.zmqKvEventsPorts?.[i]),
      replayPorts: ranksFrom(config.zmqReplayPorts?.[i]),
    };
  });
}

/** `{namespace}/kv_state_agent/slot`, as a vLLM worker takes its state endpoint. */
export function kvStateEndpoint(config: MockerConfig): string {
  return config.kvStateEndpoint ?? `${config.namespace}/kv_state_agent/slot`;
}
