import { describe, expect, test } from "bun:test";
import type { TimedRecord } from "./drive-load.ts";
import { buildResult, percentileKey, vllmDate } from "./metrics.ts";

const rec = (over: Partial<TimedRecord>): TimedRecord => ({ ok: true, sentMs: 0, ttftMs: 10, itlMs: [], e2elMs: 10, promptTokens: 100, outputTokens: 1, index: 0, inFlightAtSend: 1, ...over });
const meta = { backend: "openai", modelId: "m", baseUrl: "http://x", endpoint: "/v1/completions", requestRate: "inf" as const, maxConcurrency: 2, warmupRequests: 0 };

describe("bench metrics on known inputs", () => {
  test("TTFT, ITL, TPOT, E2EL, throughputs, reuse, errors and workers", () => {
    const records = [
      // TTFT 100, tokens at 100, 120, 150 → ITL 20, 30; E2E 150; TPOT (150 − 100) / 2 = 25.
      rec({ index: 0, ttftMs: 100, itlMs: [20, 30], e2elMs: 150, outputTokens: 3, cachedTokens: 50, worker: "w1" }),
      // TTFT 200, one gap of 40; TPOT 40.
      rec({ index: 1, ttftMs: 200, itlMs: [40], e2elMs: 240, outputTokens: 2, cachedTokens: 0, worker: "w0" }),
      // One token: no ITL, no TPOT.
      rec({ index: 2, ttftMs: 300, e2elMs: 300, outputTokens: 1, cachedTokens: 25, worker: "w1" }),
      rec({ index: 3, ok: false, errorKind: "500", error: "HTTP 500: boom", worker: "w0" }),
      rec({ index: 4, ok: false, errorKind: "timeout", error: "timed out" }),
      rec({ index: 5, ok: false, errorKind: "500", error: "HTTP 500: boom" }),
    ];
    const r = buildResult({ records, startMs: 1000, endMs: 3000, warmup: { sent: 0, failed: 0 }, cutShort: false }, meta, [50, 99.9], new Date(0));
    expect(r).toMatchObject({
      completed: 3,
      failed: 3,
      num_prompts: 6,
      duration: 2,
      total_input_tokens: 300,
      total_output_tokens: 6,
      request_throughput: 1.5,
      output_throughput: 3,
      total_token_throughput: 153,
      mean_ttft_ms: 200,
      median_ttft_ms: 200,
      p50_ttft_ms: 200,
      mean_itl_ms: 30,
      median_itl_ms: 30,
      mean_tpot_ms: 32.5,
      mean_e2el_ms: 230,
      prefix_cache_reuse_ratio: 0.25,
      cached_tokens: 75,
      error_breakdown: { "500": 2, timeout: 1 },
      per_worker: { w0: 2, w1: 2 },
      errors: ["request 3: HTTP 500: boom", "request 4: timed out", "request 5: HTTP 500: boom"],
      date: vllmDate(new Date(0)),
    });
    expect(r[percentileKey(99.9, "ttft")]).toBeCloseTo(200 + 100 * 0.998, 9);
    expect(percentileKey(99.9, "ttft")).toBe("p99.9_ttft_ms");
    expect(r.std_ttft_ms).toBeCloseTo(Math.sqrt(20000 / 3), 9);
  });

  test("no cached_tokens from the server: reuse is null, not 0", () => {
    const r = buildResult({ records: [rec({})], startMs: 0, endMs: 1000, warmup: { sent: 0, failed: 0 }, cutShort: false }, meta, [99]);
    expect(r.prefix_cache_reuse_ratio).toBeNull();
  });

  test("nothing completed: the figures are zeros", () => {
    const none = buildResult({ records: [rec({ ok: false, errorKind: "connection" })], startMs: 0, endMs: 0, warmup: { sent: 0, failed: 0 }, cutShort: false }, meta, [99]);
    expect(none).toMatchObject({ completed: 0, failed: 1, mean_ttft_ms: 0, p99_ttft_ms: 0, request_throughput: 0 });
  });
});

test("the result's date is vLLM's %Y%m%d-%H%M%S (local time), as scripts reading its result files parse it", () => {
  expect(vllmDate(new Date(2026, 11, 3, 9, 5, 7))).toBe("20261203-090507");
});
