// The server's /metrics before and after a --save-detailed run, as `vllm bench serve` reads it
// around its runs: the vLLM counters and histogram totals a run's figures can be set against
// (prefix-cache queries and hits, preemptions, the server's own TTFT and queue time, steps), each
// summed over its label sets, and the cache config vLLM exports (block size, G1 blocks).
// calibrate reads them back. A server without /metrics, or one that is not vLLM's, gives none.
import { scrapeSamples, sumOf } from "../../protocol/prometheus-scrape.ts";
import { get } from "../../transport/http/client.ts";

export const SERVER_TOTALS = [
  "vllm:prefix_cache_queries_total",
  "vllm:prefix_cache_hits_total",
  "vllm:num_preemptions_total",
  "vllm:prompt_tokens_total",
  "vllm:generation_tokens_total",
  "vllm:time_to_first_token_seconds_sum",
  "vllm:time_to_first_token_seconds_count",
  "vllm:request_queue_time_seconds_sum",
  "vllm:request_prefill_time_seconds_sum",
  "vllm:request_decode_time_seconds_sum",
  "vllm:iteration_tokens_total_sum",
  "vllm:iteration_tokens_total_count",
] as const;

export interface ServerMetricsSnapshot {
  totals: Partial<Record<(typeof SERVER_TOTALS)[number], number>>;
  /** vllm:cache_config_info's labels (its first series). */
  cache_config?: Record<string, string>;
}

/** The snapshot of `base`/metrics, or undefined when it does not answer with vLLM's metrics within 5 s. */
export async function snapshotServerMetrics(base: string, headers: Record<string, string>): Promise<ServerMetricsSnapshot | undefined> {
  let text: string;
  try {
    const res = await get(`${base.replace(/\/+$/, "")}/metrics`, { headers, signal: AbortSignal.timeout(5000) });
    if (!res.ok) return undefined;
    text = await res.text();
  } catch {
    return undefined;
  }
  const samples = scrapeSamples(text);
  const totals: ServerMetricsSnapshot["totals"] = {};
  for (const name of SERVER_TOTALS) if (samples.some((s) => s.name === name)) totals[name] = sumOf(samples, name);
  const info = samples.find((s) => s.name === "vllm:cache_config_info");
  if (Object.keys(totals).length === 0 && info === undefined) return undefined;
  return { totals, ...(info !== undefined ? { cache_config: info.labels } : {}) };
}
