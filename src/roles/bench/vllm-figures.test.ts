import { describe, expect, test } from "bun:test";
import type { RequestRecord } from "./send-request.ts";
import { goodRequests, peakFigures } from "./vllm-figures.ts";

const rec = (sentMs: number, ttftMs: number, itlMs: number[], outputTokens = itlMs.length + 1, ok = true): RequestRecord => ({
  ok,
  sentMs,
  ttftMs,
  itlMs,
  e2elMs: ttftMs + itlMs.reduce((a, b) => a + b, 0),
  promptTokens: 4,
  outputTokens,
});

describe("vLLM's timeline figures", () => {
  test("goodput counts completed requests within every SLO given (ms); TPOT is 0 for one token", () => {
    const rs = [
      rec(0, 100, [10, 10]), // ttft 100, tpot 10, e2el 120
      rec(0, 300, [10, 10]), // ttft too slow for 200
      rec(0, 50, [90, 90]), // tpot 90
      rec(0, 150, [], 1), // one token: tpot 0
      rec(0, 10, [1], 2, false), // failed: never good
    ];
    expect(goodRequests(rs, { ttft: 200 })).toBe(3);
    expect(goodRequests(rs, { ttft: 200, tpot: 50 })).toBe(2);
    expect(goodRequests(rs, { e2el: 150 })).toBe(2);
    expect(goodRequests(rs, {})).toBe(4);
  });

  test("peak output tokens per second and concurrent requests in 1 s bins", () => {
    const rs = [rec(0, 100, [100, 100, 100]), rec(200, 100, [100]), rec(1500, 100, [1000])];
    // Tokens at 100..400 and 300, 400 in bin 0 (6); 1600 in bin 1; 2600 in bin 2.
    expect(peakFigures(rs)).toEqual({ max_output_tokens_per_s: 6, max_concurrent_requests: 2 });
    expect(peakFigures([])).toEqual({ max_output_tokens_per_s: 0, max_concurrent_requests: 0 });
  });
});
