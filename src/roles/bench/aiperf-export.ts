// A bench run written in aiperf's export shapes (`--export-aiperf DIR`: aiperf-read.ts reads
// them), so aiperf's own tools (`aiperf plot`) read kvcr-mock runs. Pure.
import type { BenchResult } from "./metrics.ts";
import type { TimedRecord } from "./drive-load.ts";
export { AIPERF_RECORDS, AIPERF_SUMMARY } from "../shared/measure/aiperf-read.ts";

type Doc = Record<string, unknown>;

/** The schema aiperf 0.13.0 writes. */
const SCHEMA_VERSION = "1.0";

/** A bench run in aiperf's shapes: the summary object and the records' JSONL. `wallOffsetMs` turns the run's clock into Unix ms. */
export function aiperfFromRun(result: BenchResult, records: readonly TimedRecord[], o: { wallOffsetMs: number; version: string; benchmarkId: string }): { summary: Doc; records: string } {
  const ok = records.filter((r) => r.ok);
  const ns = (clockMs: number) => Math.round((clockMs + o.wallOffsetMs) * 1e6);
  const itlOf = (r: TimedRecord) => (r.itlMs.length > 0 ? r.itlMs.reduce((a, b) => a + b, 0) / r.itlMs.length : undefined);
  const starts = records.map((r) => r.sentMs);
  const ends = records.map((r) => r.sentMs + (Number.isFinite(r.e2elMs) ? r.e2elMs : 0));
  const t0 = starts.length > 0 ? Math.min(...starts) : 0;
  const t1 = ends.length > 0 ? Math.max(...ends) : 0;
  const promptTotal = ok.reduce((n, r) => n + r.promptTokens, 0);
  const cachedTotal = ok.reduce((n, r) => n + (r.cachedTokens ?? 0), 0);
  const errorCounts = new Map<string, number>();
  for (const r of records) if (!r.ok) errorCounts.set(r.errorKind ?? "error", (errorCounts.get(r.errorKind ?? "error") ?? 0) + 1);
  const summary: Doc = {
    schema_version: SCHEMA_VERSION,
    aiperf_version: o.version,
    benchmark_id: o.benchmarkId,
    request_throughput: { unit: "requests/sec", avg: result.request_throughput },
    request_latency: statsOf("ms", ok.map((r) => r.e2elMs)),
    request_count: { unit: "requests", avg: ok.length },
    time_to_first_token: statsOf("ms", ok.map((r) => r.ttftMs)),
    inter_token_latency: statsOf("ms", ok.flatMap((r) => (itlOf(r) === undefined ? [] : [itlOf(r)!]))),
    output_token_throughput: { unit: "tokens/sec", avg: result.output_throughput },
    output_sequence_length: statsOf("tokens", ok.map((r) => r.outputTokens)),
    input_sequence_length: statsOf("tokens", ok.map((r) => r.promptTokens)),
    benchmark_duration: { unit: "sec", avg: result.duration },
    total_isl: { unit: "tokens", avg: promptTotal },
    total_osl: { unit: "tokens", avg: ok.reduce((n, r) => n + r.outputTokens, 0) },
    total_usage_prompt_tokens: { unit: "tokens", avg: promptTotal },
    total_usage_prompt_cache_read_tokens: { unit: "tokens", avg: cachedTotal },
    completed_request_count: { unit: "requests", avg: ok.length },
    request_error_rate: { unit: "%", avg: records.length > 0 ? (100 * (records.length - ok.length)) / records.length : 0 },
    error_summary: [...errorCounts].map(([type, count]) => ({ error_details: { code: null, type, message: type }, count })),
    was_cancelled: false,
    is_complete: true,
    start_time: new Date(t0 + o.wallOffsetMs).toISOString().replace("Z", ""),
    end_time: new Date(t1 + o.wallOffsetMs).toISOString().replace("Z", ""),
  };
  const lines = records.map((r, i) => {
    // Every field aiperf's record model requires (its loader skips a record without them).
    const id = `kvcr-${o.benchmarkId}-${r.index}`;
    const metadata = {
      session_num: r.session?.session ?? i,
      x_request_id: id,
      x_correlation_id: id,
      conversation_id: r.session ? `kvcr-${o.benchmarkId}-session-${r.session.session}` : id,
      turn_index: r.session ? r.session.turn - 1 : 0,
      credit_issued_ns: ns(r.sentMs),
      request_start_ns: ns(r.sentMs),
      request_ack_ns: Number.isFinite(r.ttftMs) ? ns(r.sentMs + r.ttftMs) : null,
      request_end_ns: ns(r.sentMs + (Number.isFinite(r.e2elMs) ? r.e2elMs : 0)),
      worker_id: r.worker ?? "unknown",
      record_processor_id: "kvcr-mock-bench",
      benchmark_phase: "profiling",
      phase_index: 0,
      profiling_index: i,
      phase_name: "profiling",
      phase_kind: "profiling",
      was_cancelled: false,
      context_overflow_skip: false,
      agent_depth: 0,
      root_correlation_id: id,
    };
    if (!r.ok) return JSON.stringify({ metadata, metrics: {}, error: { code: Number(r.errorKind) || null, type: r.errorKind ?? "error", message: r.error ?? r.errorKind ?? "error" } });
    const v = (value: number | number[], unit: string) => ({ value, unit });
    const itl = itlOf(r);
    return JSON.stringify({
      metadata,
      metrics: {
        request_latency: v(r.e2elMs, "ms"),
        time_to_first_token: v(r.ttftMs, "ms"),
        ...(itl !== undefined ? { inter_token_latency: v(itl, "ms") } : {}),
        inter_chunk_latency: v(r.itlMs, "ms"),
        output_sequence_length: v(r.outputTokens, "tokens"),
        input_sequence_length: v(r.promptTokens, "tokens"),
        usage_prompt_tokens: v(r.promptTokens, "tokens"),
        usage_completion_tokens: v(r.outputTokens, "tokens"),
        ...(r.cachedTokens !== undefined ? { usage_prompt_cache_read_tokens: v(r.cachedTokens, "tokens") } : {}),
      },
    });
  });
  return { summary, records: lines.length > 0 ? `${lines.join("\n")}\n` : "" };
}

const PERCENTILES = [1, 5, 10, 25, 50, 75, 90, 95, 99] as const;

/** aiperf's statistics of a metric: avg, percentiles (linear between ranks, as numpy), min, max, std (population), count, sum. */
export function statsOf(unit: string, xs: readonly number[]): Doc {
  const v = xs.filter((x) => Number.isFinite(x));
  if (v.length === 0) return { unit, avg: null, count: 0 };
  const sorted = [...v].sort((a, b) => a - b);
  const sum = v.reduce((a, b) => a + b, 0);
  const avg = sum / v.length;
  const at = (p: number) => {
    const pos = (p / 100) * (sorted.length - 1);
    const lo = Math.floor(pos);
    const hi = Math.min(lo + 1, sorted.length - 1);
    return sorted[lo]! + (sorted[hi]! - sorted[lo]!) * (pos - lo);
  };
  const std = Math.sqrt(v.reduce((a, x) => a + (x - avg) ** 2, 0) / v.length);
  return { unit, avg, ...Object.fromEntries(PERCENTILES.map((p) => [`p${p}`, at(p)])), min: sorted[0], max: sorted.at(-1), std, count: v.length, sum };
}
