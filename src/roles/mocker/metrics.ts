// Per-rank engine metrics only kvcr-mock has, labelled worker (the worker id) and dp_rank;
// what vLLM also reports is exported under vLLM's names by vllm-metrics.ts.
import type { EngineMetrics } from "../../core/engine/engine-types.ts";
import type { MetricFamily, MetricType } from "../../protocol/prometheus.ts";

interface RankView {
  workerId: string;
  rank: number;
  engine: { metrics(): EngineMetrics };
}

const FAMILIES: [name: string, type: MetricType, help: string, pick: (m: EngineMetrics) => number][] = [
  ["kvcr_mocker_active_blocks", "gauge", "G1 blocks referenced by running requests", (m) => m.activeBlocks],
  ["kvcr_mocker_host_cache_usage", "gauge", "Used G2 blocks / total G2 blocks", (m) => m.hostCacheUsage],
  ["kvcr_mocker_prefix_hit_rate", "gauge", "Prompt tokens served from cache (G1 hits + G2 loads) / prompt tokens", (m) => m.prefixHitRate],
  ["kvcr_mocker_kv_events_emitted_total", "counter", "KV events produced by the engine", (m) => m.eventsEmitted],
  ["kvcr_mocker_kv_events_dropped_total", "counter", "Host stores dropped because their token ids were unrecoverable", (m) => m.eventsDropped],
  ["kvcr_mocker_host_blocks_stored_total", "counter", "G2 blocks whose device-to-host copy landed (host stored blocks)", (m) => m.hostBlocksStored],
  ["kvcr_mocker_step_time_ms", "gauge", "Simulated duration of the last engine step", (m) => m.lastStepMs],
  ["kvcr_mocker_generated_tokens_total", "counter", "Output tokens generated", (m) => m.generatedTokens],
  ["kvcr_mocker_finished_requests_total", "counter", "Requests finished", (m) => m.finishedRequests],
];

export function engineMetricFamilies(ranks: readonly RankView[]): MetricFamily[] {
  const snapshots = ranks.map((r) => [r, r.engine.metrics()] as const);
  return FAMILIES.map(([name, type, help, pick]) => ({
    name,
    type,
    help,
    samples: snapshots.map(([r, m]) => ({ labels: { worker: r.workerId, dp_rank: r.rank }, value: pick(m) })),
  }));
}
