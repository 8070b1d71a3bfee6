// Saved per-request arrays read back for a verdict: completed requests only, our e2els and
// cached_lens when present (vLLM's E2E otherwise), a run without arrays is "none", a malformed
// one is refused by name.
import { describe, expect, test } from "bun:test";
import { detailedRound, timingOfDetailed } from "./detailed-samples.ts";

const run = { duration: 2, ttfts: [0.1, 0, 0.2], itls: [[0.01, 0.02], [], [0.03]], output_lens: [3, 0, 2], input_lens: [10, 10, 12], errors: ["", "HTTP 500", ""] };

describe("detailed samples", () => {
  test("vLLM's arrays: completed requests, times in ms, E2E as TTFT plus the gaps, no cache figures", () => {
    const r = detailedRound(run, "a.json")!;
    expect(r.durationS).toBe(2);
    expect(r.requests).toHaveLength(2);
    expect(r.requests[0]!.ttftMs).toBeCloseTo(100, 9);
    expect(r.requests[0]!.itlSumMs).toBeCloseTo(30, 9);
    expect(r.requests[0]!.e2elMs).toBeCloseTo(130, 9);
    expect(r.requests[1]).toMatchObject({ itlCount: 1, outputTokens: 2, promptTokens: 12 });
    expect(r.requests[1]!.cachedTokens).toBeNaN();
  });

  test("ours: e2els and cached_lens are used", () => {
    const r = detailedRound({ ...run, e2els: [0.5, 0, 0.6], cached_lens: [4, 0, null] }, "a.json")!;
    expect(r.requests[0]!.e2elMs).toBeCloseTo(500, 9);
    expect(r.requests[0]!.cachedTokens).toBe(4);
    expect(r.requests[1]!.cachedTokens).toBeNaN();
  });

  test("no arrays: none; malformed arrays: refused naming the file and the array", () => {
    expect(detailedRound({ completed: 3 }, "a.json")).toBeUndefined();
    expect(() => detailedRound({ ...run, itls: [[0.01]] }, "b.json")).toThrow("--compare: b.json: itls is 1 long where ttfts is 3");
    expect(() => detailedRound({ ...run, ttfts: [0.1, 0, "x"] }, "b.json")).toThrow('ttfts[2] is "x", not a number');
    expect(() => detailedRound({ ...run, errors: "none" }, "b.json")).toThrow("errors is not an array as long as ttfts");
  });

  test("client timing of saved runs: the worst lag, reads at once weighted by gaps", () => {
    const t = timingOfDetailed([{ ...run, completed: 2, client_event_loop_lag: { p99_ms: 4 }, itl_same_read_share: 0.5 }, { ...run, completed: 2, client_event_loop_lag: { p99_ms: 9 }, itl_same_read_share: 0 }]);
    expect(t).toEqual({ lag: { p99_ms: 9 }, sameReadShare: 0.25, gapsPerRequest: 1.5 });
  });
});
