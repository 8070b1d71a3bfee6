import { describe, expect, test } from "bun:test";
import { observedRun } from "./observed-run.ts";

/** Three requests as vllm bench serve --save-detailed writes them (seconds), the second failed. */
const vllm = {
  backend: "openai",
  model_id: "Qwen/Qwen3-8B",
  request_rate: 4,
  burstiness: 1,
  max_concurrency: null,
  input_lens: [100, 200, 300],
  output_lens: [3, 0, 2],
  ttfts: [0.05, 0, 0.07],
  itls: [[0.01, 0.012], [], [0.02]],
  errors: ["", "Internal Server Error", ""],
};

describe("a measured run's requests", () => {
  test("vLLM's file: completed requests in ms, E2E as TTFT plus the gaps, arrivals from its request rate, and what is assumed said", () => {
    const r = observedRun(vllm, "v.json");
    expect(r.requests).toEqual([
      { sendMs: NaN, promptTokens: 100, outputTokens: 3, cachedTokens: NaN, ttftMs: 50, e2eMs: expect.closeTo(72, 9) },
      { sendMs: NaN, promptTokens: 300, outputTokens: 2, cachedTokens: NaN, ttftMs: 70, e2eMs: expect.closeTo(90, 9) },
    ]);
    expect(r.failed).toBe(1);
    expect(r.model).toBe("Qwen/Qwen3-8B");
    expect(r.arrival).toEqual({ kind: "rate", requestsPerSecond: 4, burstiness: 1, scaleToRate: true });
    expect(r.warnings.join("\n")).toContain("1 failed request(s) left out");
    expect(r.warnings.join("\n")).toContain("no cached prompt lengths (cached_lens): no prefix reuse is assumed");
    expect(r.warnings.join("\n")).toContain("no start_times: arrivals are drawn as the run's request_rate 4");
  });

  test("with start_times, e2els and cached_lens (ours): used as given; max_concurrency with every request at once is a closed loop", () => {
    const r = observedRun({ ...vllm, start_times: [10, 10.5, 11], e2els: [0.08, 0, 0.1], cached_lens: [64, 0, null], per_worker: { a: 1, b: 1 } }, "o.json");
    expect(r.requests.map((q) => [q.sendMs, q.e2eMs, q.cachedTokens])).toEqual([[10_000, 80, 64], [11_000, 100, NaN]]);
    expect(r.workers).toBe(2);
    expect(r.arrival).toBeUndefined();
    expect(r.warnings.join("\n")).toContain("1 request(s) without a cached prompt length");
    expect(observedRun({ ...vllm, request_rate: "inf", max_concurrency: 8 }, "c.json").arrival).toEqual({ kind: "concurrency", concurrency: 8 });
  });

  test("a run without per-request times is refused naming the file and the arrays it needs; a bad value is named with its index", () => {
    const summary = { completed: 3, mean_ttft_ms: 50 };
    expect(() => observedRun(summary, "s.json")).toThrow("--from s.json: has no per-request times (missing input_lens, output_lens, ttfts, itls); calibrate needs the arrays input_lens, output_lens, ttfts, itls");
    expect(() => observedRun({ ...vllm, ttfts: [0.05, 0, "x"] }, "b.json")).toThrow('--from b.json: ttfts[2] is "x", expected a number ≥ 0');
    expect(() => observedRun({ ...vllm, itls: [[0.01]] }, "b.json")).toThrow("--from b.json: itls is 1 long where ttfts is 3");
    expect(() => observedRun({ ...vllm, cached_lens: [1, 2, -3] }, "b.json")).toThrow("cached_lens[2] is -3, expected a count ≥ 0 or null");
    expect(() => observedRun({ runs: [vllm, vllm] }, "r.json")).toThrow("--from r.json: holds 2 runs; calibrate fits one");
    expect(() => observedRun({ ...vllm, errors: ["x", "y", "z"] }, "f.json")).toThrow("--from f.json: has no completed request (3 failed)");
    expect(() => observedRun([1, 2], "a.json")).toThrow("--from a.json: is not a bench result object");
  });

  test("the server's counters around the run: its cache config, its prefix hits (said when cached_lens are missing) and its own mean TTFT", () => {
    const server_metrics = {
      before: { totals: { "vllm:prefix_cache_queries_total": 1000, "vllm:prefix_cache_hits_total": 100, "vllm:time_to_first_token_seconds_sum": 1, "vllm:time_to_first_token_seconds_count": 10 } },
      after: { totals: { "vllm:prefix_cache_queries_total": 2000, "vllm:prefix_cache_hits_total": 350, "vllm:time_to_first_token_seconds_sum": 1.12, "vllm:time_to_first_token_seconds_count": 12 }, cache_config: { block_size: "16", num_gpu_blocks: "4096" } },
    };
    const r = observedRun({ ...vllm, server_metrics }, "m.json");
    expect(r.server).toEqual({ blockSize: 16, numGpuBlocks: 4096, prefixHitShare: 0.25, meanTtftMs: expect.closeTo(60, 9) });
    expect(r.warnings.join("\n")).toContain("the server's own counters say 25.0 % of looked-up prompt tokens were cached over the run");
    // Read leniently: what is not there, or not numbers, is left out.
    expect(observedRun({ ...vllm, server_metrics: { after: { cache_config: { block_size: "x" } } } }, "m.json").server).toBeUndefined();
  });
});
