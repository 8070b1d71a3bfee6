// The figures a replay report and a bench result both carry, under the key names of vLLM's
// benchmark_serving: run totals and throughputs, and each latency metric's mean/median/std and
// percentiles. One place, so a simulated and a measured run are computed and named alike.
import { percentile, summarize, type Summary } from "./stats.ts";

export interface ServingTotals {
  completed: number;
  failed: number;
  /** Seconds from the first request to the last token. */
  duration: number;
  total_input_tokens: number;
  total_output_tokens: number;
  request_throughput: number;
  output_throughput: number;
  total_token_throughput: number;
}

/** Totals of a run; throughputs are 0 when the run took no time. */
export function servingTotals(t: { completed: number; failed: number; durationS: number; inputTokens: number; outputTokens: number }): ServingTotals {
  const per = (x: number) => (t.durationS > 0 ? x / t.durationS : 0);
  return {
    completed: t.completed,
    failed: t.failed,
    duration: t.durationS,
    total_input_tokens: t.inputTokens,
    total_output_tokens: t.outputTokens,
    request_throughput: per(t.completed),
    output_throughput: per(t.outputTokens),
    total_token_throughput: per(t.inputTokens + t.outputTokens),
  };
}

/** `p${q}_${metric}_ms`, as vLLM names a percentile (q as written: p99.9). */
export function percentileKey(q: number, metric: string): string {
  return `p${String(q)}_${metric}_ms`;
}

/** mean/median/std and each percentile of `values` (reordered in place), keyed as vLLM names them. */
export function metricFields(metric: string, values: Float64Array, percentiles: readonly number[]): Record<string, number> {
  const s = summarize(values);
  const out: Record<string, number> = { [`mean_${metric}_ms`]: s.mean, [`median_${metric}_ms`]: s.median, [`std_${metric}_ms`]: s.std };
  for (const q of percentiles) out[percentileKey(q, metric)] = summarized(s, q) ?? percentile(values, q);
  return out;
}

/** The percentiles summarize already selected (no second pass over millions of gaps). */
function summarized(s: Summary, q: number): number | undefined {
  return q === 50 ? s.p50 : q === 90 ? s.p90 : q === 99 ? s.p99 : undefined;
}
