// Request records → the result of a benchmark run, with the key names of `vllm bench serve`'s
// result file: counts, duration, throughputs, mean/median/std and every requested
// percentile of TTFT, TPOT, ITL and E2EL (computed and named as replay's, core/replay/serving-figures.ts),
// plus prefix-cache reuse, error_breakdown and per_worker.
import type { SessionFigures } from "../../core/replay/session-report.ts";
import { sessionFiguresOfRecords } from "./session-outcomes.ts";
import { metricFields, percentileKey as keyOf, servingTotals, type ServingTotals } from "../../core/replay/serving-figures.ts";
import type { GoodputSlo } from "../../config/bench.ts";
import type { LoadResult, TimedRecord } from "./drive-load.ts";
import { goodRequests, peakFigures, type PeakFigures } from "./vllm-figures.ts";

/** A date as `vllm bench serve` writes it in its result and file names: `%Y%m%d-%H%M%S`, local time. */
export function vllmDate(d: Date): string {
  const two = (n: number) => String(n).padStart(2, "0");
  return `${d.getFullYear()}${two(d.getMonth() + 1)}${two(d.getDate())}-${two(d.getHours())}${two(d.getMinutes())}${two(d.getSeconds())}`;
}

export const METRICS = ["ttft", "tpot", "itl", "e2el"] as const;
export type Metric = (typeof METRICS)[number];
export type MetricKey = `${string}_${Metric}_ms`;
export const ERROR_SAMPLE_LIMIT = 20;

export interface RunMeta {
  backend: string;
  modelId: string;
  baseUrl: string;
  endpoint: string;
  requestRate: number | "inf";
  maxConcurrency: number | null;
  warmupRequests: number;
  /** Label of the run in comparisons (mode, concurrency point). */
  label?: string;
  /** Gamma shape of the arrivals (1 = Poisson). */
  burstiness?: number;
  /** vLLM's tokenizer_id (--tokenizer, else the model); no tokenizer is loaded. */
  tokenizerId?: string;
  /** --goodput SLOs (ms); request_goodput is null without them. */
  goodput?: GoodputSlo;
}

export type BenchResult = {
  date: string;
  label?: string;
  backend: string;
  /** vLLM's legacy copy of backend. */
  endpoint_type: string;
  tokenizer_id: string;
  burstiness: number;
  model_id: string;
  base_url: string;
  endpoint: string;
  num_prompts: number;
  request_rate: number | "inf";
  max_concurrency: number | null;
  warmup_requests: number;
  /** Cached prompt tokens / prompt tokens over completed requests; null when the server reports no cached_tokens. */
  prefix_cache_reuse_ratio: number | null;
  cached_tokens: number;
  /** Failed requests by HTTP status ("500") or cause (timeout, connection, stream_cut, stream_error, bad_response, empty_output). */
  error_breakdown: Record<string, number>;
  /** Requests cut off by a stop (Ctrl-C): neither completed nor failed. */
  aborted: number;
  /** Completed requests within every --goodput SLO, per second; null without --goodput (as vLLM). */
  request_goodput: number | null;
  /** Share of ITL gaps whose token came in the same network read as the one before: seen at once, not spaced (0–1). */
  itl_same_read_share: number;
  /** Things that make the figures less trustworthy (a busy load client, a warm cache), also logged. */
  warnings: string[];
  /** Requests per worker, from the worker response header; empty when the server sends none. */
  per_worker: Record<string, number>;
  /** The first failures, "request N: message". */
  errors: string[];
  /** Session workloads: per turn index and per session (core/replay/session-report.ts). */
  sessions?: SessionFigures;
} & ServingTotals & PeakFigures & { [K in `${"mean" | "median" | "std"}_${Metric}_ms`]: number } & Record<MetricKey, number>;

export function percentileKey(q: number, metric: Metric): MetricKey {
  return keyOf(q, metric) as MetricKey;
}

export function buildResult(load: LoadResult, meta: RunMeta, percentiles: readonly number[], date = new Date()): BenchResult {
  const ok = load.records.filter((r) => r.ok);
  const aborted = load.records.filter((r) => !r.ok && r.errorKind === "aborted").length;
  const failed = load.records.filter((r) => !r.ok && r.errorKind !== "aborted");
  const ttft = Float64Array.from(ok, (r) => r.ttftMs);
  const e2el = Float64Array.from(ok, (r) => r.e2elMs);
  const tpot = Float64Array.from(ok.filter((r) => r.outputTokens > 1), (r) => (r.e2elMs - r.ttftMs) / (r.outputTokens - 1));
  const itl = Float64Array.from(ok.flatMap((r) => r.itlMs));
  const sameRead = ok.reduce((n, r) => n + (r.itlSameRead ?? 0), 0);
  let input = 0;
  let output = 0;
  let cached = 0;
  let reportedCache = false;
  for (const r of ok) {
    input += r.promptTokens;
    output += r.outputTokens;
    if (r.cachedTokens !== undefined) {
      reportedCache = true;
      cached += r.cachedTokens;
    }
  }
  const duration = Math.max(0, (load.endMs - load.startMs) / 1000);
  const sessions = sessionFiguresOfRecords(load.records);
  const errorBreakdown: Record<string, number> = {};
  for (const r of failed) errorBreakdown[r.errorKind ?? "unknown"] = (errorBreakdown[r.errorKind ?? "unknown"] ?? 0) + 1;
  const perWorker: Record<string, number> = {};
  for (const r of load.records) if (r.worker !== undefined) perWorker[r.worker] = (perWorker[r.worker] ?? 0) + 1;
  const result = {
    date: vllmDate(date), // vLLM's format, which scripts reading its result files parse
    ...(meta.label !== undefined ? { label: meta.label } : {}),
    backend: meta.backend,
    endpoint_type: meta.backend,
    model_id: meta.modelId,
    tokenizer_id: meta.tokenizerId ?? meta.modelId,
    base_url: meta.baseUrl,
    endpoint: meta.endpoint,
    num_prompts: load.records.length,
    request_rate: meta.requestRate,
    burstiness: meta.burstiness ?? 1,
    max_concurrency: meta.maxConcurrency,
    warmup_requests: meta.warmupRequests,
    ...servingTotals({ completed: ok.length, failed: failed.length, durationS: duration, inputTokens: input, outputTokens: output }),
    aborted,
    request_goodput: meta.goodput !== undefined ? (duration > 0 ? goodRequests(ok, meta.goodput) / duration : 0) : null,
    ...peakFigures(ok),
    itl_same_read_share: itl.length > 0 ? sameRead / itl.length : 0,
    ...metricFields("ttft", ttft, percentiles),
    ...metricFields("tpot", tpot, percentiles),
    ...metricFields("itl", itl, percentiles),
    ...metricFields("e2el", e2el, percentiles),
    prefix_cache_reuse_ratio: reportedCache && input > 0 ? cached / input : null,
    cached_tokens: cached,
    error_breakdown: sortedByKey(errorBreakdown),
    per_worker: sortedByKey(perWorker),
    errors: failed.slice(0, ERROR_SAMPLE_LIMIT).map((r) => `request ${r.index}: ${r.error ?? r.errorKind}`),
    warnings: [] as string[],
    ...(sessions !== undefined ? { sessions } : {}),
  };
  return result as BenchResult;
}

function sortedByKey(o: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.entries(o).sort(([a], [b]) => a.localeCompare(b, "en", { numeric: true })));
}

/** The records' TTFTs, ITLs (ms) of completed requests: the distributions the HTML report draws. */
export function distributions(records: readonly TimedRecord[]): { ttft: number[]; itl: number[] } {
  const ok = records.filter((r) => r.ok);
  return { ttft: ok.map((r) => r.ttftMs), itl: ok.flatMap((r) => r.itlMs) };
}
