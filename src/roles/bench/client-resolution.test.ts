// What the load client could not resolve: figures at or below its lag, per-request averages at
// the lag spread over their gaps, ITL percentiles among gaps read at once; and the short cell text.
import { describe, expect, test } from "bun:test";
import { unresolvedCell, unresolvedFigures, whyUnresolved } from "./client-resolution.ts";

const timing = { lag: { p99_ms: 20 }, sameReadShare: 0.6, gapsPerRequest: 100 };

describe("client resolution", () => {
  test("a latency no larger than the client's lag is unresolved; above it, resolved", () => {
    expect(whyUnresolved("ttft", "mean", 15, timing)).toBe("below the load client's own event-loop lag (p99 20.0 ms)");
    expect(whyUnresolved("ttft", 90, 20, timing)).toBeDefined();
    expect(whyUnresolved("ttft", 90, 25, timing)).toBeUndefined();
    expect(whyUnresolved("e2el", "median", 500, timing)).toBeUndefined();
  });

  test("TPOT and mean ITL carry the lag once per request: resolved down to lag / gaps", () => {
    expect(whyUnresolved("tpot", "mean", 0.5, timing)).toBeUndefined();
    expect(whyUnresolved("tpot", 99, 0.1, timing)).toContain("spread over 100 gaps per request");
    expect(whyUnresolved("itl", "mean", 0.25, timing)).toBeUndefined();
  });

  test("ITL percentiles that fall among gaps read at once are unresolved whatever their value", () => {
    expect(whyUnresolved("itl", "median", 0.003, timing)).toBe("60 % of tokens arrived in the same network read as the one before");
    expect(whyUnresolved("itl", 60, 0.003, timing)).toBeDefined();
    expect(whyUnresolved("itl", 90, 30, timing)).toBeUndefined();
  });

  test("no lag measured: only a zero figure is unresolved", () => {
    const none = { sameReadShare: 0, gapsPerRequest: 5 };
    expect(whyUnresolved("itl", "median", 0, none)).toBeDefined();
    expect(whyUnresolved("itl", "median", 0.4, none)).toBeUndefined();
  });

  test("every mean, median and percentile of a result is checked; nothing for a run with no completed request", () => {
    const r = { completed: 3, mean_ttft_ms: 50, median_ttft_ms: 10, p99_ttft_ms: 80, mean_itl_ms: 5, median_itl_ms: 0, p99_itl_ms: 40, mean_tpot_ms: 5, median_tpot_ms: 5, p99_tpot_ms: 6, mean_e2el_ms: 300, median_e2el_ms: 290, p99_e2el_ms: 400 };
    expect(Object.keys(unresolvedFigures(r, timing, [99])).sort()).toEqual(["median_itl_ms", "median_ttft_ms"]);
    expect(unresolvedFigures({ ...r, completed: 0 }, timing, [99])).toEqual({});
    expect(unresolvedCell("60 % of tokens arrived in the same network read as the one before")).toBe("unresolved (read at once)");
    expect(unresolvedCell("below the load client's own event-loop lag (p99 20.0 ms)")).toBe("unresolved (client lag)");
  });
});
