// A run's result as written to --output-json / --save-result: the key set chosen by
// --percentile-metrics, --metadata copied to the top level, and with --save-detailed vLLM's
// per-request arrays (send order; ttfts, itls and start_times in seconds as vLLM writes them,
// the aggregate keys stay in ms) plus two of ours a verdict reads back (`bench --compare`):
// e2els (seconds), cached_lens (cached prompt tokens, null where the server did not say) and
// workers (the worker that served each request, null where the server did not name it);
// for sessions, session_ids, turns and finish_times.
// Also vLLM's default --save-result file name.
import { METRICS, vllmDate, type Metric } from "./metrics.ts";
import type { TimedRecord } from "./drive-load.ts";

export interface ResultJsonOptions {
  /** Metrics whose mean/median/std/pNN keys are kept (default all). */
  percentileMetrics?: readonly Metric[];
  metadata?: Record<string, string>;
  detailed?: boolean;
}

const STAT_KEY = /^(mean|median|std|p[\d.]+)_(ttft|tpot|itl|e2el)_ms$/;

export function resultJson(result: object, records: readonly TimedRecord[], o: ResultJsonOptions): Record<string, unknown> {
  const keep = new Set<string>(o.percentileMetrics ?? METRICS);
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(result)) {
    const m = STAT_KEY.exec(k);
    if (!m || keep.has(m[2]!)) out[k] = v;
  }
  Object.assign(out, o.metadata ?? {});
  if (o.detailed) Object.assign(out, detailedArrays(records));
  return out;
}

/** vLLM's per-request arrays, in send order; failed requests have output 0, TTFT 0 and their error. */
export function detailedArrays(records: readonly TimedRecord[]) {
  const sent = [...records].sort((a, b) => a.sentMs - b.sentMs || a.index - b.index);
  return {
    input_lens: sent.map((r) => r.promptTokens),
    output_lens: sent.map((r) => (r.ok ? r.outputTokens : 0)),
    ttfts: sent.map((r) => (r.ok ? r.ttftMs / 1000 : 0)),
    itls: sent.map((r) => (r.ok ? r.itlMs.map((x) => x / 1000) : [])),
    // Monotonic seconds (vLLM's are time.perf_counter()), not wall time.
    start_times: sent.map((r) => r.sentMs / 1000),
    generated_texts: sent.map((r) => r.text ?? ""),
    errors: sent.map((r) => (r.ok ? "" : (r.error ?? r.errorKind ?? "failed"))),
    e2els: sent.map((r) => (r.ok ? r.e2elMs / 1000 : 0)),
    cached_lens: sent.map((r) => (r.ok ? (r.cachedTokens ?? null) : 0)),
    // The worker that served each request, where the server names it (calibrate replays the run's own routing).
    workers: sent.map((r) => r.worker ?? null),
    // Session workloads: each request's session and turn, and when it finished (seconds, as start_times).
    ...(sent.some((r) => r.session !== undefined)
      ? { session_ids: sent.map((r) => r.session?.session ?? null), turns: sent.map((r) => r.session?.turn ?? null), finish_times: sent.map((r) => (r.sentMs + r.e2elMs) / 1000) }
      : {}),
  };
}

/** vLLM's name: `{label or backend}-{rate}qps[-concurrency{N}]-{model basename}-{YYYYmmdd-HHMMSS}.json`. */
export function defaultResultFilename(p: { label?: string; backend: string; requestRate: number | "inf"; maxConcurrency?: number; model: string; date: Date }): string {
  // The rate as Python prints a float (10 → "10.0", inf → "inf").
  const rate = p.requestRate === "inf" || p.requestRate === Infinity ? "inf" : Number.isInteger(p.requestRate) ? `${p.requestRate}.0` : String(p.requestRate);
  const stamp = vllmDate(p.date);
  return `${p.label ?? p.backend}-${rate}qps${p.maxConcurrency !== undefined ? `-concurrency${p.maxConcurrency}` : ""}-${p.model.split("/").at(-1)}-${stamp}.json`;
}
