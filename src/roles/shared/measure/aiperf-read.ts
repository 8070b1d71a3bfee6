// aiperf's export files read (shapes captured from aiperf 0.13.0's own artifact directory):
// `profile_export_aiperf.json`, one object of metrics `{unit, avg, p50, …}` plus run facts, and
// `profile_export.jsonl`, one record per request `{metadata, metrics: {name: {value, unit}}}` (or
// `{metadata, error}`), into a bench result as `--compare` and `calibrate` read one (its headline
// figures, and from the records the per-request arrays). roles/bench/aiperf-export.ts writes them. Pure.
import { KvcrError } from "../../../lib/errors.ts";

type Doc = Record<string, unknown>;

export const AIPERF_SUMMARY = "profile_export_aiperf.json";
export const AIPERF_RECORDS = "profile_export.jsonl";

/** Whether a parsed JSON document is aiperf's summary export. */
export function isAiperfSummary(doc: unknown): boolean {
  return typeof doc === "object" && doc !== null && !Array.isArray(doc) && typeof (doc as Doc).aiperf_version === "string";
}

/** `flag` names the option the file came from. */
const badFor = (flag: string) => (path: string, what: string) => new KvcrError("RUN_BAD_AIPERF", `${flag}: ${path}: ${what}; expected aiperf's ${path.endsWith(".jsonl") ? AIPERF_RECORDS : AIPERF_SUMMARY}`);

/** A summary metric's statistic, or undefined when the file lacks it (a wrong type is named). */
function statOf(doc: Doc, key: string, field: string, path: string, bad: ReturnType<typeof badFor>): number | undefined {
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
 * records, the per-request arrays (seconds) of --save-detailed, start_times from the records' send
 * times. Either may be missing, not both. `flag` names the option the files came from in errors.
 */
export function resultFromAiperf(summary: { doc: unknown; path: string } | undefined, records: { text: string; path: string } | undefined, flag = "--compare"): Doc {
  const bad = badFor(flag);
  const stat = (d: Doc, key: string, field: string, path: string) => statOf(d, key, field, path, bad);
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
  if (records !== undefined) Object.assign(out, detailedFromRecords(records.text, records.path, out, bad));
  if (out.completed === undefined) throw bad(summary?.path ?? records!.path, "no requests");
  return out;
}

/** The records as --save-detailed's arrays; counts and duration too when no summary gave them. */
function detailedFromRecords(text: string, path: string, from: Doc, bad: ReturnType<typeof badFor>): Doc {
  const ttfts: number[] = [];
  const itls: number[][] = [];
  const outputs: number[] = [];
  const inputs: number[] = [];
  const e2els: number[] = [];
  const cached: (number | null)[] = [];
  const errors: string[] = [];
  const starts: (number | undefined)[] = [];
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
    starts.push(typeof start === "number" && Number.isFinite(start) ? start : undefined);
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
  // Seconds from the first send, as --save-detailed's start_times (vLLM's are monotonic seconds too).
  if (starts.every((s) => s !== undefined)) out.start_times = starts.map((s) => (s! - first) / 1e9);
  if (from.completed === undefined) {
    out.completed = errors.filter((e) => e === "").length;
    out.failed = errors.length - (out.completed as number);
  }
  if (from.duration === undefined && Number.isFinite(first) && last > first) out.duration = (last - first) / 1e9;
  return out;
}

