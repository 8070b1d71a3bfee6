import { describe, expect, test } from "bun:test";
import { metricFields, servingTotals } from "./serving-figures.ts";
import { percentile } from "./stats.ts";

describe("serving figures", () => {
  test("summarize's p50/p90/p99 and a fresh selection agree, keyed as vLLM names them", () => {
    const values = Float64Array.from({ length: 101 }, (_, i) => (i * 37) % 101);
    const f = metricFields("ttft", values.slice(), [50, 90, 99, 99.9, 25]);
    expect(Object.keys(f)).toEqual(["mean_ttft_ms", "median_ttft_ms", "std_ttft_ms", "p50_ttft_ms", "p90_ttft_ms", "p99_ttft_ms", "p99.9_ttft_ms", "p25_ttft_ms"]);
    for (const q of [50, 90, 99, 99.9, 25]) expect(f[`p${q}_ttft_ms`]).toBe(percentile(values.slice(), q));
    expect(f.median_ttft_ms).toBe(50);
  });

  test("a run that took no time has zero throughputs", () => {
    expect(servingTotals({ completed: 0, failed: 2, durationS: 0, inputTokens: 0, outputTokens: 0 }).request_throughput).toBe(0);
    expect(servingTotals({ completed: 4, failed: 0, durationS: 2, inputTokens: 10, outputTokens: 6 })).toEqual({
      completed: 4, failed: 0, duration: 2, total_input_tokens: 10, total_output_tokens: 6, request_throughput: 2, output_throughput: 3, total_token_throughput: 8,
    });
  });
});
