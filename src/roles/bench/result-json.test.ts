import { describe, expect, test } from "bun:test";
import type { TimedRecord } from "./drive-load.ts";
import { defaultResultFilename, detailedArrays, resultJson } from "./result-json.ts";

const rec = (index: number, sentMs: number, ok: boolean): TimedRecord => ({
  index,
  inFlightAtSend: 1,
  ok,
  sentMs,
  ttftMs: ok ? 120 : NaN,
  itlMs: ok ? [10, 20] : [],
  e2elMs: 150,
  promptTokens: 8,
  outputTokens: ok ? 3 : 0,
  ...(ok ? { worker: "w1" } : {}),
  text: ok ? "a b c" : undefined,
  ...(ok ? {} : { errorKind: "500", error: "HTTP 500: boom" }),
});

describe("the JSON result's vLLM shape", () => {
  test("per-request arrays in send order; ttfts, itls and e2els in seconds; failures as vLLM writes them", () => {
    const d = detailedArrays([rec(1, 20, false), rec(0, 10, true)]);
    expect(d).toEqual({
      input_lens: [8, 8],
      output_lens: [3, 0],
      ttfts: [0.12, 0],
      itls: [[0.01, 0.02], []],
      start_times: [0.01, 0.02],
      generated_texts: ["a b c", ""],
      errors: ["", "HTTP 500: boom"],
      e2els: [0.15, 0],
      cached_lens: [null, 0],
      workers: ["w1", null],
    });
  });

  test("--percentile-metrics keeps only those metrics' stat keys; metadata goes to the top level", () => {
    const r = { completed: 1, mean_ttft_ms: 1, p99_ttft_ms: 2, "p99.9_e2el_ms": 3, std_itl_ms: 4, mean_tpot_ms: 5 };
    expect(resultJson(r, [], { percentileMetrics: ["ttft", "tpot"], metadata: { tp: "1" } })).toEqual({ completed: 1, mean_ttft_ms: 1, p99_ttft_ms: 2, mean_tpot_ms: 5, tp: "1" });
    expect(Object.keys(resultJson(r, [], {}))).toEqual(Object.keys(r));
  });

  test("vLLM's default file name", () => {
    const date = new Date(2026, 0, 2, 3, 4, 5);
    expect(defaultResultFilename({ backend: "openai", requestRate: 10, model: "org/llama-8b", date })).toBe("openai-10.0qps-llama-8b-20260102-030405.json");
    expect(defaultResultFilename({ label: "run", backend: "openai", requestRate: "inf", maxConcurrency: 8, model: "m", date })).toBe("run-infqps-concurrency8-m-20260102-030405.json");
    expect(defaultResultFilename({ backend: "openai-chat", requestRate: 2.5, model: "m", date })).toBe("openai-chat-2.5qps-m-20260102-030405.json");
  });
});
