// The agentic workload's shape against literals: sessions × turns requests, session-major, a first
// turn with no delay and later ones extending their predecessor after a non-negative think time.
import { describe, expect, test } from "bun:test";
import { agenticProblems, agenticWorkload, type AgenticOptions } from "./agentic.ts";

const o: AgenticOptions = { numPrefixes: 2, prefixTokens: 8, suffixTokens: 4, outputTokens: 3, seed: 4, sessions: 3, turns: 4, toolTokens: 5, thinkTimeMs: 50 };
const read = (r: { inputLength: number; writeTokens(out: Uint32Array): void }) => {
  const out = new Uint32Array(r.inputLength);
  r.writeTokens(out);
  return [...out];
};

describe("agenticWorkload", () => {
  test("sessions × turns requests, session-major, each turn after its predecessor", () => {
    const w = agenticWorkload(o);
    expect(w.map((r) => [r.session!.session, r.session!.turn, r.session!.previous])).toEqual([
      [0, 1, -1], [0, 2, 0], [0, 3, 1], [0, 4, 2],
      [1, 1, -1], [1, 2, 4], [1, 3, 5], [1, 4, 6],
      [2, 1, -1], [2, 2, 8], [2, 3, 9], [2, 4, 10],
    ]);
    expect(w.map((r) => r.inputLength)).toEqual([12, 5, 5, 5, 12, 5, 5, 5, 12, 5, 5, 5]);
  });

  test("a first turn starts at once; later turns wait a think time ≥ 0 (exponential, mean near 50 ms)", () => {
    const w = agenticWorkload({ ...o, sessions: 200, turns: 3 });
    expect(w.filter((r) => r.session!.turn === 1).every((r) => r.session!.delayMs === 0)).toBe(true);
    const delays = w.filter((r) => r.session!.turn > 1).map((r) => r.session!.delayMs);
    expect(delays.every((d) => d >= 0)).toBe(true);
    const mean = delays.reduce((a, b) => a + b, 0) / delays.length;
    expect(mean).toBeGreaterThan(40);
    expect(mean).toBeLessThan(60);
  });

  test("tokens are below the default vocabulary of 32000, and the range is used", () => {
    // 400,000 prefix draws: a vocabulary one token larger would show its extra token about 12 times.
    const all = read(agenticWorkload({ ...o, numPrefixes: 1, sessions: 1, turns: 1, prefixTokens: 400_000 })[0]!);
    expect(all.reduce((m, t) => Math.max(m, t), 0)).toBe(31_999);
  });
});

describe("agenticProblems", () => {
  test("one prefix and one first-turn token are enough; none of either is a problem", () => {
    expect(agenticProblems({ ...o, numPrefixes: 1, prefixTokens: 0, suffixTokens: 1 })).toEqual([]);
    expect(agenticProblems({ ...o, numPrefixes: 0, prefixTokens: 0, suffixTokens: 0 })).toEqual([
      "--num-prefixes: got 0, expected an integer ≥ 1",
      "--prefix-tokens + --suffix-tokens: a first turn needs at least 1 token",
    ]);
  });
});
