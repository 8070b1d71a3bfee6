// The mocker's vLLM V1 families: every (worker, rank) exported as one vLLM engine, with vLLM's names,
// types, help and buckets (vllm/v1/metrics/loggers.py). Labels are vLLM's `model_name` and `engine`
// (the dp rank, as a DP deployment numbers its engines) plus `worker`, the worker id the frontend,
// discovery and `x-kvcr-worker` use, since one process serves many workers; a worker's own API
// lists only its ranks, without `worker`, exactly as vLLM labels them.
import type { EngineMetrics } from "../../core/engine/engine-types.ts";
import { labelText, type MetricFamily, type MetricType } from "../../protocol/prometheus.ts";
import { FINISH_REASONS, PROMPT_SOURCES, type VllmRankStats } from "./vllm-stats.ts";

export interface VllmRankView {
  workerId: string;
  rank: number;
  engine: { metrics(): EngineMetrics; readonly config: { readonly blockSize: number; readonly numGpuBlocks: number; readonly enablePrefixCaching: boolean } };
  stats: VllmRankStats;
}

type Labels = Record<string, string>;
type Sample = MetricFamily["samples"][number];

interface Row {
  v: VllmRankView;
  m: EngineMetrics;
  labels: Labels;
  /** `labels` rendered, and with one more label (name=value → text): rendered once per rank. */
  text: string;
  extra: Map<string, string>;
}

type Rendered = { key: string; labels: Labels; text: string; extra: Map<string, string> };
/** Per rank: its label set and rendered texts, kept across scrapes (a scrape may list ~300k series); with and without `worker`. */
const RENDERED = { process: new WeakMap<VllmRankStats, Rendered>(), worker: new WeakMap<VllmRankStats, Rendered>() };

// [name without `vllm:`, type, help (vLLM's), value]; counters are named without `_total`, as in
// vLLM's code, and get it on exposition as prometheus_client adds it.
const SCALARS: [string, MetricType, string, (r: Row) => number][] = [
  ["num_requests_running", "gauge", "Number of requests in model execution batches.", ({ m }) => m.runningRequests - m.loadingRequests],
  // Requests waiting for a G2 load count as waiting, as vLLM keeps async KV loads in its waiting queue.
  ["num_requests_waiting", "gauge", "Number of requests waiting to be processed.", ({ m }) => m.waitingRequests + m.loadingRequests],
  ["kv_cache_usage_perc", "gauge", "KV-cache usage. 1 means 100 percent usage.", ({ m }) => m.gpuCacheUsage],
  ["prefix_cache_queries", "counter", "Prefix cache queries, in terms of number of queried tokens.", ({ m }) => m.prefixQueryTokens],
  ["prefix_cache_hits", "counter", "Prefix cache hits, in terms of number of cached tokens.", ({ m }) => m.prefixHitTokens - m.prefixHostHitTokens],
  // The host tier is the mock's KV connector (an offloading connector): its hits are external.
  ["external_prefix_cache_queries", "counter", "External prefix cache queries from KV connector cross-instance cache sharing, in terms of number of queried tokens.", ({ m }) => (m.hostBlocks > 0 ? m.prefixQueryTokens : 0)],
  ["external_prefix_cache_hits", "counter", "External prefix cache hits from KV connector cross-instance cache sharing, in terms of number of cached tokens.", ({ m }) => m.prefixHostHitTokens],
  ["mm_cache_queries", "counter", "Multi-modal cache queries, in terms of number of queried items.", () => 0],
  ["mm_cache_hits", "counter", "Multi-modal cache hits, in terms of number of cached items.", () => 0],
  ["num_preemptions", "counter", "Cumulative number of preemption from the engine.", ({ m }) => m.preemptions],
  ["prompt_tokens", "counter", "Number of prefill tokens processed.", ({ v }) => v.stats.promptTokens],
  ["prompt_tokens_cached", "counter", "Number of cached prompt tokens (local + external).", ({ v }) => v.stats.cachedPromptTokens],
  ["generation_tokens", "counter", "Number of generation tokens processed.", ({ v }) => v.stats.generationTokens],
];

const HISTOGRAM_HELP: Record<keyof VllmRankStats["histograms"], string> = {
  time_to_first_token_seconds: "Histogram of time to first token in seconds.",
  inter_token_latency_seconds: "Histogram of inter-token latency in seconds.",
  request_time_per_output_token_seconds: "Histogram of time_per_output_token_seconds per request.",
  e2e_request_latency_seconds: "Histogram of e2e request latency in seconds.",
  request_queue_time_seconds: "Histogram of time spent in WAITING phase for request.",
  request_inference_time_seconds: "Histogram of time spent in RUNNING phase for request.",
  request_prefill_time_seconds: "Histogram of time spent in PREFILL phase for request.",
  request_decode_time_seconds: "Histogram of time spent in DECODE phase for request.",
  request_prompt_tokens: "Number of prefill tokens processed.",
  request_generation_tokens: "Number of generation tokens processed.",
  request_prefill_kv_computed_tokens: "Histogram of new KV tokens computed during prefill (excluding cached tokens).",
  request_max_num_generation_tokens: "Histogram of maximum number of requested generation tokens.",
  request_params_n: "Histogram of the n request parameter.",
  request_params_max_tokens: "Histogram of the max_tokens request parameter.",
  iteration_tokens_total: "Histogram of number of tokens per engine_step.",
};

/** Exposition name: `vllm:` + name, and `_total` for counters (prometheus_client's suffix). */
function exposed(name: string, type: MetricType): string {
  return `vllm:${name}${type === "counter" ? "_total" : ""}`;
}

/** `scope` "worker": one worker's API, vLLM's labels only (no `worker`). */
export function vllmMetricFamilies(ranks: readonly VllmRankView[], modelName: string, scope: "process" | "worker" = "process"): MetricFamily[] {
  const cache = RENDERED[scope];
  const withWorker = scope === "process";
  // Labels sorted by name, as vLLM's scrape shows them.
  const rows: Row[] = ranks.map((v) => {
    const key = `${modelName}\u0000${v.workerId}\u0000${v.rank}`;
    let c = cache.get(v.stats);
    if (c?.key !== key) {
      const labels: Labels = withWorker ? { engine: String(v.rank), model_name: modelName, worker: v.workerId } : { engine: String(v.rank), model_name: modelName };
      cache.set(v.stats, (c = { key, labels, text: labelText(labels), extra: new Map() }));
    }
    return { v, m: v.engine.metrics(), labels: c.labels, text: c.text, extra: c.extra };
  });
  const out: MetricFamily[] = SCALARS.map(([name, type, help, pick]) => ({ name: exposed(name, type), type, help, samples: rows.map((r) => ({ labelText: r.text, value: pick(r) })) }));
  const labelled = (name: string, type: MetricType, help: string, label: string, values: readonly string[], pick: (r: Row, value: string) => number): MetricFamily => ({
    name: exposed(name, type),
    type,
    help,
    samples: rows.flatMap((r) =>
      values.map((value): Sample => {
        const k = `${label}=${value}`;
        let text = r.extra.get(k);
        if (text === undefined) r.extra.set(k, (text = labelText(withLabel(r.labels, label, value))));
        return { labelText: text, value: pick(r, value) };
      }),
    ),
  });
  out.push(
    labelled("num_requests_waiting_by_reason", "gauge", "Number of waiting requests by reason. Reason labels: 'capacity' = waiting for scheduling capacity; 'deferred' = deferred by transient constraints (LoRA budget, KV transfer, blocked status). Sum of all reasons equals vllm:num_requests_waiting.", "reason", ["capacity", "deferred"], ({ m }, reason) => (reason === "capacity" ? m.waitingRequests - m.loraDeferredRequests : m.loadingRequests + m.loraDeferredRequests)),
    labelled("engine_sleep_state", "gauge", "Engine sleep state; awake = 0 means engine is sleeping; awake = 1 means engine is awake; weights_offloaded = 1 means sleep level 1; discard_all = 1 means sleep level 2.", "sleep_state", ["awake", "weights_offloaded", "discard_all"], (_r, s) => (s === "awake" ? 1 : 0)),
    labelled("prompt_tokens_by_source", "counter", "Number of prompt tokens by source.", "source", PROMPT_SOURCES, ({ v }, s) => v.stats.promptBySource[s as (typeof PROMPT_SOURCES)[number]]),
    labelled("request_success", "counter", "Count of successfully processed requests.", "finished_reason", FINISH_REASONS, ({ v }, reason) => v.stats.success[reason as (typeof FINISH_REASONS)[number]]),
  );
  for (const key of Object.keys(HISTOGRAM_HELP) as (keyof typeof HISTOGRAM_HELP)[]) {
    out.push({ name: `vllm:${key}`, type: "histogram", help: HISTOGRAM_HELP[key], samples: rows.flatMap((r) => r.v.stats.histograms[key].renderedSamples(r.labels)) });
  }
  out.push(...offloadFamilies(rows));
  out.push({
    name: "vllm:cache_config_info",
    type: "gauge",
    help: "Information of the LLMEngine CacheConfig",
    // vLLM: every CacheConfig field plus `engine`, no model_name; here the fields the mock has.
    samples: rows.map(({ v }) => {
      const c = v.engine.config;
      return {
        labels: {
          block_size: String(c.blockSize),
          cache_dtype: "auto",
          enable_prefix_caching: c.enablePrefixCaching ? "True" : "False",
          engine: String(v.rank),
          num_gpu_blocks: String(c.numGpuBlocks),
          ...(withWorker ? { worker: v.workerId } : {}),
        },
        value: 1,
      };
    }),
  });
  return out;
}

/**
 * The offloading connector's families (vLLM's OffloadPromMetrics), present once a rank copied
 * blocks between G1 and G2: bytes and seconds per transfer_type, and the size of each copy.
 */
function offloadFamilies(rows: readonly Row[]): MetricFamily[] {
  const bytes: MetricFamily = { name: "vllm:kv_offload_total_bytes_total", type: "counter", help: "Number of bytes offloaded by KV connector", samples: [] };
  const time: MetricFamily = { name: "vllm:kv_offload_total_time_total", type: "counter", help: "Total time measured by all KV offloading operations", samples: [] };
  const size: MetricFamily = { name: "vllm:kv_offload_size", type: "histogram", help: "Histogram of KV offload transfer size, in bytes.", samples: [] };
  for (const r of rows) {
    for (const [type, t] of r.v.stats.offload) {
      const labels = withLabel(r.labels, "transfer_type", type);
      bytes.samples.push({ labels, value: t.bytes });
      time.samples.push({ labels, value: t.seconds });
      size.samples.push(...t.size.samples(labels));
    }
  }
  return bytes.samples.length > 0 ? [bytes, time, size] : [];
}

/** `labels` plus one more, kept in name order. */
function withLabel(labels: Labels, name: string, value: string): Labels {
  const entries: [string, string][] = [...Object.entries(labels), [name, value]];
  return Object.fromEntries(entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}
