import { describe, expect, test } from "bun:test";
import { sessionFigures, type TurnOutcome } from "./session-report.ts";

const t = (session: number, turn: number, sentMs: number, finishMs: number, promptTokens: number, cachedTokens: number, ok = true, ttftMs = 10 * turn): TurnOutcome => ({ session, turn, ok, sentMs, ttftMs, finishMs, promptTokens, cachedTokens });

describe("session figures", () => {
  test("per turn index: reuse over the turns that reported a cache figure, TTFT over completed turns; per session: first send to last finish", () => {
    const s = sessionFigures([t(0, 1, 0, 100, 100, 0), t(0, 2, 300, 500, 200, 100), t(1, 1, 50, 150, 100, 50), t(1, 2, 400, 2050, 200, NaN, true, 40), t(2, 1, 60, 70, 100, 0, false)]);
    expect(s.sessions).toBe(3);
    expect(s.completed_sessions).toBe(2);
    expect(s.mean_turns_per_session).toBeCloseTo(5 / 3);
    expect(s.mean_session_time_s).toBeCloseTo((0.5 + 2.0) / 2);
    expect(s.p99_session_time_s).toBeCloseTo(0.5 + 1.5 * 0.99);
    expect(s.median_session_time_s).toBeCloseTo(1.25, 12);
    expect(s.p90_session_time_s).toBeCloseTo(0.5 + 1.5 * 0.9, 12);
    expect(s.per_turn).toEqual([
      { turn: 1, completed: 2, failed: 1, mean_prompt_tokens: 100, prefix_cache_reuse_ratio: 50 / 200, mean_ttft_ms: 10, p90_ttft_ms: 10 },
      { turn: 2, completed: 2, failed: 0, mean_prompt_tokens: 200, prefix_cache_reuse_ratio: 0.5, mean_ttft_ms: 30, p90_ttft_ms: 38 },
    ]);
  });

  test("a server that reports no cache figure: reuse null, not 0", () => {
    expect(sessionFigures([t(0, 1, 0, 1, 10, NaN)]).per_turn[0]!.prefix_cache_reuse_ratio).toBeNull();
  });
});
