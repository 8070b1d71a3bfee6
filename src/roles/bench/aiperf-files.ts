// aiperf's export files, both ways (shapes captured from aiperf 0.13.0's own artifact directory):
// `profile_export_aiperf.json`, one object of metrics `{unit, avg, p50, …}` plus run facts, and
// `profile_export.jsonl`, one record per request `{metadata, metrics: {name: {value, unit}}}` (or
// `{metadata, error}`). Read: into a bench result as `--compare` reads one (its headline figures,
// and from the records the per-request arrays a verdict resamples). Written: a bench run in those
// shapes (`--export-aiperf DIR`), so aiperf's own tools (`aiperf plot`) read kvcr-mock runs. Pure.
import { KvcrError } from "../../lib/errors.ts";
import type { BenchResult } from "./metrics.ts";
import type { TimedRecord } from "./drive-load.ts";

type Doc = Record<string, unknown>;

export const AIPERF_SUMMARY = "profile_export_aiperf.json";
export const AIPERF_RECORDS = "profile_export.jsonl";
/** The schema aiperf 0.13.0 writes. */
const SCHEMA_VERSION = "1.0";

/** Whether a parsed JSON document is aiperf's summary export. */
export function isAiperfSummary(doc: unknown): boolean {
  return typeof doc === "object" && doc !== null && !Array.isArray(doc) && typeof (doc as Doc).aiperf_version === "string";
}

const bad = (path: string, what: string) => new KvcrError("COMPARE_BAD_AIPERF", `--compare: ${path}: ${what}; expected aiperf's ${path.endsWith(".jsonl") ? AIPERF_RECORDS : AIPERF_SUMMARY}`);

/** A summary metric's statistic, or undefined when the file lacks it (a wrong type is named). */
function stat(doc: Doc, key: string, field: string, path: string): number | undefined {
  const m = doc[key];
  if (m === undefined || m === null) return undefined;
  if (typeof m !== "object" || Array.isArray(m)) throw bad(path, `${key} is ${JSON.stringify(m)}, not a metric object {unit, avg, …}`);
  const v = (m as Doc)[field];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "number" || !Number.isFinite(v)) throw bad(path, `${key}.${field} is ${JSON.stringify(v)}, not a number`);
  return v;
}

/**
 * aiperf's summary and records as a bench result (the keys --compare reads): counts, duration,
 * throughputs, TTFT / ITL / E2E figures, prefix reuse from the server's cached prompt tokens; with
 * records, the per-request arrays (seconds) of --save-detailed. Either may be missing, not both.
 */
export function resultFromAiperf(summary: { doc: unknown; path: string } | undefined, records: { text: string; path: string } | undefined): Doc {
  const out: Doc = { label: "aiperf", backend: "aiperf" };
  if (summary !== undefined) {
    const { path } = summary;
    if (!isAiperfSummary(summary.doc)) throw bad(path, "no aiperf_version");
    const d = summary.doc as Doc;
    const errors = Array.isArray(d.error_summary) ? (d.error_summary as Doc[]).reduce((n, e) => n + (typeof e.count === "number" ? e.count : 0), 0) : 0;
    const completed = stat(d, "request_count", "avg", path);
    if (completed === undefined) throw bad(path, "request_count is missing");
    Object.assign(out, {
      completed,
      failed: errors,
      duration: stat(d, "benchmark_duration", "avg", path),
      request_throughput: stat(d, "request_throughput", "avg", path),
      output_throughput: stat(d, "output_token_throughput", "avg", path),
      mean_ttft_ms: stat(d, "time_to_first_token", "avg", path),
      p99_ttft_ms: stat(d, "time_to_first_token", "p99", path),
      mean_itl_ms: stat(d, "inter_token_latency", "avg", path),
      p99_e2el_ms: stat(d, "request_latency", "p99", path),
      aiperf_version: d.aiperf_version,
    });
    const [cached, prompt] = [stat(d, "total_usage_prompt_cache_read_tokens", "avg", path), stat(d, "total_usage_prompt_tokens", "avg", path)];
    if (cached !== undefined && prompt !== undefined && prompt > 0) out.prefix_cache_reuse_ratio = cached / prompt;
  }
  if (records !== undefined) Object.assign(out, detailedFromRecords(records.text, records.path, out));
  if (out.completed === undefined) throw bad(summary?.path ?? records!.path, "no requests");
  return out;
}

/** The records as --save-detailed's arrays; counts and duration too when no summary gave them. */
function detailedFromRecords(text: string, path: string, from: Doc): Doc {
  const ttfts: number[] = [];
  const itls: number[][] = [];
  const outputs: number[] = [];
  const inputs: number[] = [];
  const e2els: number[] = [];
  const cached: (number | null)[] = [];
  const errors: string[] = [];
  let first = Infinity;
  let last = -Infinity;
  text.split("\n").forEach((line, i) => {
    if (line.trim() === "") return;
    const where = `${path}:${i + 1}`;
    let rec: Doc;
    try {
      rec = JSON.parse(line) as Doc;
    } catch {
      throw bad(path, `line ${i + 1} is not JSON`);
    }
    const meta = (rec.metadata ?? {}) as Doc;
    if (meta.benchmark_phase !== undefined && meta.benchmark_phase !== "profiling") return; // warm-up
    const [start, end] = [meta.request_start_ns, meta.request_end_ns];
    if (typeof start === "number") first = Math.min(first, start);
    if (typeof end === "number") last = Math.max(last, end);
    if (rec.error !== undefined && rec.error !== null) {
      const e = rec.error as Doc;
      errors.push(String(e.message ?? e.type ?? "error") || "error");
      ttfts.push(0);
      itls.push([]);
      outputs.push(0);
      inputs.push(0);
      e2els.push(0);
      cached.push(0); // a failed request is left out of every figure
      return;
    }
    const metrics = rec.metrics as Record<string, { value?: unknown }> | undefined;
    if (typeof metrics !== "object" || metrics === null) throw bad(path, `record ${where} has neither metrics nor error`);
    const value = (key: string, required: boolean): number | undefined => {
      const v = metrics[key]?.value;
      if (v === undefined && !required) return undefined;
      if (typeof v !== "number" || !Number.isFinite(v)) throw bad(path, `record ${where}: metrics.${key}.value is ${JSON.stringify(v)}, not a number`);
      return v;
    };
    const gaps = metrics.inter_chunk_latency?.value;
    if (gaps !== undefined && (!Array.isArray(gaps) || gaps.some((g) => typeof g !== "number"))) throw bad(path, `record ${where}: metrics.inter_chunk_latency.value is not a list of numbers`);
    errors.push("");
    ttfts.push(value("time_to_first_token", true)! / 1000);
    itls.push(((gaps as number[] | undefined) ?? []).map((g) => g / 1000));
    outputs.push(value("output_sequence_length", true)!);
    inputs.push(value("input_sequence_length", false) ?? 0);
    e2els.push(value("request_latency", true)! / 1000);
    cached.push(value("usage_prompt_cache_read_tokens", false) ?? null);
  });
  if (errors.length === 0) throw bad(path, "no profiling records");
  const out: Doc = { ttfts, itls, output_lens: outputs, input_lens: inputs, e2els, errors, ...(cached.every((c) => c !== null) ? { cached_lens: cached } : {}) };
  if (from.completed === undefined) {
    out.completed = errors.filter((e) => e === "").length;
    out.failed = errors.length - (out.completed as number);
  }
  if (from.duration === undefined && Number.isFinite(first) && last > first) out.duration = (last - first) / 1e9;
  return out;
}

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
