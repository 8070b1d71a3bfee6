// aiperf's export files both ways: its own summary and records (captured from aiperf 0.13.0,
// test/fixtures/aiperf) read as a bench result, figure by figure against the file's numbers; a
// bench run written in its shapes and read back; bad files named with their field.
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { thrownBy } from "../../../test/harness.ts";
import { FIXTURES_DIR } from "../../../test/harness.ts";
import { KvcrError } from "../../lib/errors.ts";
import { aiperfFromRun, statsOf } from "./aiperf-export.ts";
import { resultFromAiperf } from "../shared/measure/aiperf-read.ts";
import type { TimedRecord } from "./drive-load.ts";
import type { BenchResult } from "./metrics.ts";

const DIR = join(FIXTURES_DIR, "aiperf");
const summaryPath = join(DIR, "profile_export_aiperf.json");
const recordsPath = join(DIR, "profile_export.jsonl");
const summary = { doc: JSON.parse(readFileSync(summaryPath, "utf8")) as Record<string, any>, path: summaryPath };
const records = { text: readFileSync(recordsPath, "utf8"), path: recordsPath };
type CapturedMetric = "time_to_first_token" | "request_latency" | "inter_chunk_latency" | "output_sequence_length" | "input_sequence_length";
const lines = records.text.trim().split("\n").map((l) => JSON.parse(l) as { metadata: Record<string, unknown>; metrics: Record<CapturedMetric, { value: any }> });

describe("aiperf's files read as a bench result", () => {
  test("the summary's figures under bench's keys", () => {
    const r = resultFromAiperf(summary, undefined);
    const d = summary.doc;
    expect(r).toMatchObject({
      label: "aiperf",
      completed: 40,
      failed: 0,
      duration: d.benchmark_duration.avg,
      request_throughput: d.request_throughput.avg,
      output_throughput: d.output_token_throughput.avg,
      mean_ttft_ms: d.time_to_first_token.avg,
      p99_ttft_ms: d.time_to_first_token.p99,
      mean_itl_ms: d.inter_token_latency.avg,
      p99_e2el_ms: d.request_latency.p99,
      prefix_cache_reuse_ratio: 0,
      aiperf_version: "0.13.0",
    });
    expect(r.ttfts).toBeUndefined(); // no records, no verdict
  });

  test("the records as --save-detailed's arrays, in seconds; the summary's counts kept", () => {
    const r = resultFromAiperf(summary, records);
    expect(r.completed).toBe(40);
    expect((r.ttfts as number[]).length).toBe(12);
    expect(r.ttfts).toEqual(lines.map((l) => l.metrics.time_to_first_token.value / 1000));
    expect(r.e2els).toEqual(lines.map((l) => l.metrics.request_latency.value / 1000));
    expect(r.itls).toEqual(lines.map((l) => (l.metrics.inter_chunk_latency.value as number[]).map((g) => g / 1000)));
    expect(r.output_lens).toEqual(lines.map((l) => l.metrics.output_sequence_length.value));
    expect(r.input_lens).toEqual(lines.map((l) => l.metrics.input_sequence_length.value));
    expect(r.cached_lens).toEqual(lines.map(() => 0));
    expect(r.errors).toEqual(lines.map(() => ""));
    // Send times as start_times: seconds from the first request's.
    const starts = lines.map((l) => l.metadata.request_start_ns as number);
    expect(r.start_times).toEqual(starts.map((s) => expect.closeTo((s - Math.min(...starts)) / 1e9, 9)));
    // Records alone: counts and duration from the records themselves.
    const alone = resultFromAiperf(undefined, records);
    expect([alone.completed, alone.failed]).toEqual([12, 0]);
    expect(alone.duration as number).toBeGreaterThan(0);
  });

  test("an error record, a warm-up record, and files that are not aiperf's are named", () => {
    const meta = { request_start_ns: 1, request_end_ns: 2 };
    const text = [JSON.stringify({ metadata: { ...meta, benchmark_phase: "warmup" }, metrics: {} }), JSON.stringify({ metadata: meta, metrics: {}, error: { code: 500, type: "Internal", message: "boom" } }), records.text.split("\n")[0]].join("\n");
    const r = resultFromAiperf(undefined, { text, path: "x/profile_export.jsonl" });
    expect([r.completed, r.failed, r.errors]).toEqual([1, 1, ["boom", ""]]);
    const fail = (f: () => unknown) => thrownBy(KvcrError, f).message;
    expect(fail(() => resultFromAiperf({ doc: { request_count: {} }, path: "s.json" }, undefined))).toBe("--compare: s.json: no aiperf_version; expected aiperf's profile_export_aiperf.json");
    expect(fail(() => resultFromAiperf({ doc: { aiperf_version: "0.13.0", request_count: { avg: "40" } }, path: "s.json" }, undefined))).toBe("--compare: s.json: request_count.avg is \"40\", not a number; expected aiperf's profile_export_aiperf.json");
    expect(fail(() => resultFromAiperf({ doc: { aiperf_version: "0.13.0", request_count: 5 }, path: "s.json" }, undefined))).toContain("request_count is 5, not a metric object");
    expect(fail(() => resultFromAiperf({ doc: { aiperf_version: "0.13.0" }, path: "s.json" }, undefined))).toContain("request_count is missing");
    expect(fail(() => resultFromAiperf(undefined, { text: "{nope", path: "r.jsonl" }))).toBe("--compare: r.jsonl: line 1 is not JSON; expected aiperf's profile_export.jsonl");
    expect(fail(() => resultFromAiperf(undefined, { text: JSON.stringify({ metadata: meta, metrics: { time_to_first_token: { value: "x" } } }), path: "r.jsonl" }))).toContain("record r.jsonl:1: metrics.time_to_first_token.value is \"x\", not a number");
    expect(fail(() => resultFromAiperf(undefined, { text: JSON.stringify({ metadata: meta }), path: "r.jsonl" }))).toContain("has neither metrics nor error");
    expect(fail(() => resultFromAiperf(undefined, { text: "\n", path: "r.jsonl" }))).toContain("no profiling records");
  });
});

describe("a bench run in aiperf's shapes", () => {
  const rec = (i: number, over: Partial<TimedRecord> = {}): TimedRecord => ({ ok: true, sentMs: 1000 + i * 10, ttftMs: 20 + i, itlMs: [5, 7], e2elMs: 40 + i, promptTokens: 100, outputTokens: 3, cachedTokens: 64, index: i, inFlightAtSend: 1, ...over });
  const result = { request_throughput: 12.5, output_throughput: 37.5, duration: 0.32 } as BenchResult;

  test("summary statistics, records with every field aiperf's model requires, and the round trip back", () => {
    const runs = [rec(0), rec(1), rec(2), rec(3, { ok: false, errorKind: "500", error: "HTTP 500", ttftMs: NaN, itlMs: [], e2elMs: 5, outputTokens: 0 })];
    const files = aiperfFromRun(result, runs, { wallOffsetMs: 1_700_000_000_000, version: "kvcr-mock 1", benchmarkId: "b" });
    expect(files.summary).toMatchObject({
      aiperf_version: "kvcr-mock 1",
      request_count: { unit: "requests", avg: 3 },
      request_throughput: { unit: "requests/sec", avg: 12.5 },
      time_to_first_token: { unit: "ms", avg: 21, p50: 21, min: 20, max: 22, count: 3, sum: 63 },
      inter_token_latency: { unit: "ms", avg: 6, count: 3 },
      total_usage_prompt_tokens: { avg: 300 },
      total_usage_prompt_cache_read_tokens: { avg: 192 },
      error_summary: [{ error_details: { code: null, type: "500", message: "500" }, count: 1 }],
      start_time: "2023-11-14T22:13:21.000",
    });
    const first = JSON.parse(files.records.split("\n")[0]!) as { metadata: Record<string, unknown>; metrics: Record<string, { value: unknown }> };
    for (const key of ["session_num", "request_start_ns", "request_end_ns", "worker_id", "record_processor_id", "benchmark_phase", "was_cancelled", "context_overflow_skip", "agent_depth"]) expect(first.metadata).toHaveProperty(key);
    expect([first.metadata.request_start_ns, first.metadata.request_end_ns]).toEqual([1_700_000_001_000_000_000, 1_700_000_001_040_000_000]);
    expect(first.metrics.inter_chunk_latency!.value).toEqual([5, 7]);
    const back = resultFromAiperf({ doc: files.summary, path: "s.json" }, { text: files.records, path: "r.jsonl" });
    expect(back).toMatchObject({ completed: 3, failed: 1, prefix_cache_reuse_ratio: 192 / 300, ttfts: [0.02, 0.021, 0.022, 0], errors: ["", "", "", "HTTP 500"], cached_lens: [64, 64, 64, 0] });
  });

  test("statsOf: aiperf's linear percentiles and population std", () => {
    const rounded = Object.fromEntries(Object.entries(statsOf("ms", [4, 1, 3, 2])).map(([k, v]) => [k, typeof v === "number" ? Math.round(v * 1e9) / 1e9 : v]));
    expect(rounded).toEqual({ unit: "ms", avg: 2.5, p1: 1.03, p5: 1.15, p10: 1.3, p25: 1.75, p50: 2.5, p75: 3.25, p90: 3.7, p95: 3.85, p99: 3.97, min: 1, max: 4, std: Math.round(Math.sqrt(1.25) * 1e9) / 1e9, count: 4, sum: 10 });
    expect(statsOf("ms", [NaN])).toEqual({ unit: "ms", avg: null, count: 0 });
  });
});
