// Verdicts on synthetic runs with known answers: identical setups (A/A) rarely call anything,
// over the whole family of figures; a known 30 % shift is called with an interval around 1.3;
// Holm's levels, the one-round and unresolved cases, the raw scale for zero figures, the
// sample-size check and reproducibility.
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { createRng, type Rng } from "../random/rng.ts";
import type { RequestSample, RoundSamples, SideSamples } from "./run-samples.ts";
import { compareSides } from "./verdict.ts";

interface Shape {
  rounds: number;
  requests: number;
  /** Log-scale sd of a round's effect on every latency (stack-to-stack), and of one request's TTFT. */
  betweenSd: number;
  withinSd: number;
  /** Multiplies every latency of the side (1 = the same setup). */
  shift?: number;
  reuse?: number;
}

function gauss(rng: Rng): number {
  return Math.sqrt(-2 * Math.log(1 - rng.next())) * Math.cos(2 * Math.PI * rng.next());
}

/**
 * A side whose rounds each draw a stack effect, then requests around it; throughput follows the
 * latencies. `drift` adds a given effect to round k (what both sides of a paired round share).
 */
function side(label: string, s: Shape, rng: Rng, drift?: readonly number[]): SideSamples {
  const shift = s.shift ?? 1;
  const rounds: RoundSamples[] = Array.from({ length: s.rounds }, (_, k) => {
    const effect = s.betweenSd * gauss(rng) + (drift?.[k] ?? 0);
    const requests: RequestSample[] = Array.from({ length: s.requests }, () => {
      const ttftMs = shift * 50 * Math.exp(effect + s.withinSd * gauss(rng));
      const tpotMs = shift * 8 * Math.exp(effect + 0.1 * gauss(rng));
      const reused = rng.next() < (s.reuse ?? 0.6);
      return { ttftMs, e2elMs: ttftMs + 100 * tpotMs, outputTokens: 101, itlSumMs: 100 * tpotMs, itlCount: 100, promptTokens: 1000, cachedTokens: reused ? 900 : 0 };
    });
    return { requests, durationS: (shift * s.requests * Math.exp(effect + 0.02 * gauss(rng))) / 4 };
  });
  return { label, rounds };
}

const anyCall = (v: ReturnType<typeof compareSides>) => v.entries.some((e) => e.call === "higher" || e.call === "lower");

describe("verdict", () => {
  test("the same samples on both sides: ratio 1, no clear difference, an interval around 1", () => {
    const a = side("a", { rounds: 3, requests: 80, betweenSd: 0.05, withinSd: 0.4 }, createRng(1));
    const v = compareSides([a, { ...a, label: "b" }], { seed: 1, resamples: 100 });
    expect(v.entries).toHaveLength(7);
    expect(v.family).toBe(7);
    for (const e of v.entries) {
      expect(e.ratio).toBe(1);
      expect(e.call).toBe("no clear difference");
      expect(e.ci_low!).toBeLessThan(1);
      expect(e.ci_high!).toBeGreaterThan(1);
    }
  });

  test("A/A: identical setups call any difference in at most 1 comparison in 20, across stack-noise regimes", () => {
    let trials = 0;
    let calls = 0;
    for (const [betweenSd, withinSd, rounds] of [[0.1, 0.5, 3], [0.01, 0.5, 3], [0.2, 0.3, 5], [0, 0.5, 1]] as const) {
      const rng = createRng(1000 + rounds + Math.round(betweenSd * 100));
      for (let i = 0; i < 50; i++) {
        const shape = { rounds, requests: 40, betweenSd, withinSd };
        const v = compareSides([side("a", shape, rng), side("b", shape, rng)], { seed: i, resamples: 80 });
        trials++;
        if (anyCall(v)) calls++;
      }
    }
    // 200 deterministic trials; a plain percentile bootstrap over 3 rounds calls in ~15-20 %.
    expect(calls / trials).toBeLessThanOrEqual(0.05);
  });

  test("A/A with rounds that drift together: compared round by round, still at most 1 in 20", () => {
    const rng = createRng(77);
    let calls = 0;
    const trials = 100;
    for (let i = 0; i < trials; i++) {
      const shape = { rounds: 3, requests: 40, betweenSd: 0.05, withinSd: 0.4 };
      const drift = Array.from({ length: 3 }, () => 0.5 * gauss(rng));
      const v = compareSides([side("a", shape, rng, drift), side("b", shape, rng, drift)], { seed: i, resamples: 200, paired: true });
      expect(v.paired).toBe(true);
      if (anyCall(v)) calls++;
    }
    expect(calls / trials).toBeLessThanOrEqual(0.05);
  });

  test("drift shared by each round's sides cancels when paired: a 25 % shift shows, unpaired it drowns", () => {
    const rng = createRng(31);
    const shape = { rounds: 4, requests: 150, betweenSd: 0.02, withinSd: 0.2 };
    const drift = [0, 0.6, -0.5, 0.9];
    const sides = [side("a", shape, rng, drift), side("b", { ...shape, shift: 1.25 }, rng, drift)];
    const ttft = (paired: boolean) => compareSides(sides, { seed: 31, resamples: 100, paired }).entries.find((e) => e.metric === "mean_ttft_ms")!;
    expect(ttft(true).call).toBe("higher");
    expect(ttft(true).ci_low! <= 1.25 && 1.25 <= ttft(true).ci_high!).toBe(true);
    expect(ttft(false).call).toBe("no clear difference");
    // Unequal rounds cannot be paired: compared as independent sides.
    expect(compareSides([sides[0]!, { ...sides[1]!, rounds: sides[1]!.rounds.slice(0, 3) }], { seed: 31, resamples: 50, paired: true }).paired).toBe(false);
    // Two rounds a side are the fewest that pair; one is too few.
    const two = sides.map((s) => ({ ...s, rounds: s.rounds.slice(0, 2) }));
    expect(compareSides(two, { seed: 31, resamples: 50, paired: true }).paired).toBe(true);
    expect(compareSides(sides.map((s) => ({ ...s, rounds: s.rounds.slice(0, 1) })), { seed: 31, resamples: 50, paired: true }).paired).toBe(false);
  });

  test("a known 30 % shift over 5 rounds: mean TTFT called higher with an interval that covers 1.3", () => {
    let covered = 0;
    let runs = 0;
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 1_000_000 }), (seed) => {
        const rng = createRng(seed);
        const shape = { rounds: 5, requests: 150, betweenSd: 0.03, withinSd: 0.3 };
        const v = compareSides([side("base", shape, rng), side("slow", { ...shape, shift: 1.3 }, rng)], { seed, resamples: 150 });
        const ttft = v.entries.find((e) => e.metric === "mean_ttft_ms")!;
        expect(ttft.call).toBe("higher");
        runs++;
        if (ttft.ci_low! <= 1.3 && 1.3 <= ttft.ci_high!) covered++;
        // Throughput falls as latencies rise: called lower.
        expect(v.entries.find((e) => e.metric === "output_throughput")!.call).toBe("lower");
      }),
      { seed: 42, numRuns: 40 },
    );
    expect(covered / runs).toBeGreaterThanOrEqual(0.9);
  });

  test("Holm: the smallest p-value is tested at alpha / family, the levels relax in order, calls agree with the intervals", () => {
    const rng = createRng(5);
    const shape = { rounds: 4, requests: 100, betweenSd: 0.02, withinSd: 0.3 };
    const v = compareSides([side("a", shape, rng), side("b", { ...shape, shift: 2 }, rng)], { seed: 5, resamples: 100 });
    const tested = v.entries.filter((e) => e.confidence !== null).sort((x, y) => x.p_value! - y.p_value!);
    expect(tested[0]!.confidence).toBeCloseTo(1 - 0.05 / 7, 10);
    for (let k = 1; k < tested.length; k++) expect(tested[k]!.confidence!).toBeLessThanOrEqual(tested[k - 1]!.confidence! + 1e-12);
    for (const e of v.entries) {
      const excludes = e.ci_low! > 1 || e.ci_high! < 1;
      expect(excludes).toBe(e.call !== "no clear difference");
    }
  });

  test("one round per side: request noise only, and no interval for whole-run throughput", () => {
    const rng = createRng(9);
    const shape = { rounds: 1, requests: 100, betweenSd: 0, withinSd: 0.3 };
    const v = compareSides([side("a", shape, rng), side("b", shape, rng)], { seed: 9, resamples: 100 });
    expect(v.requestNoiseOnly).toBe(true);
    const thr = v.entries.find((e) => e.metric === "output_throughput")!;
    expect(thr).toMatchObject({ call: "no clear difference", ci_low: null, ci_high: null });
    expect(thr.note).toContain("2 rounds");
    expect(v.entries.find((e) => e.metric === "mean_ttft_ms")!.note).toContain("request noise only");
    expect(v.family).toBe(6);
  });

  test("an interval's half-width is t(1 − level/2, df) × se: by hand for rounds with no request noise", () => {
    // Every request of a round has the same TTFT, so resampling a round moves nothing (within 0):
    // round k is 50·e^(0.1k) ms on the baseline, 50·e^(0.3 + 0.1k) ms on the side. On the log
    // scale each side's rounds have variance 0.01 (0, 0.1, 0.2 about 0.1, over n − 1 = 2), so
    // se = √(0.01/3 + 0.01/3) and Satterthwaite's df = (2v)² / (2v²/2) = 4; the difference is 0.3.
    const rounds = (offset: number): RoundSamples[] =>
      [0, 1, 2].map((k) => {
        const ttftMs = 50 * Math.exp(offset + 0.1 * k);
        return { requests: Array.from({ length: 30 }, () => ({ ttftMs, e2elMs: ttftMs + 100, outputTokens: 11, itlSumMs: 100, itlCount: 10, promptTokens: 100, cachedTokens: 0 })), durationS: 1 };
      });
    // Every other figure is left out of the family: mean TTFT is tested alone, at level 0.05.
    const v = compareSides([{ label: "a", rounds: rounds(0) }, { label: "b", rounds: rounds(0.3) }], { seed: 1, resamples: 20, unresolved: (_s, m) => (m === "mean_ttft_ms" ? undefined : "not this test's") });
    expect(v.family).toBe(1);
    const e = v.entries.find((x) => x.metric === "mean_ttft_ms")!;
    expect(e.confidence).toBeCloseTo(0.95, 12);
    expect(e.ratio!).toBeCloseTo(Math.exp(0.3), 9);
    // t(0.975, 4) = 2.7764451051977987; half = 2.7764… × 0.0816496… = 0.2266958.
    const se = Math.sqrt((2 * 0.01) / 3);
    const half = 2.7764451051977987 * se;
    expect(e.ci_low!).toBeCloseTo(Math.exp(0.3 - half), 6);
    expect(e.ci_high!).toBeCloseTo(Math.exp(0.3 + half), 6);
    expect(e.ci_low!).toBeCloseTo(1.0760578, 6);
    expect(e.ci_high!).toBeCloseTo(1.6933279, 6);
    expect(e.call).toBe("higher");
  });

  test("an unresolved figure is not compared: called unresolved with the reason, out of the family", () => {
    const rng = createRng(3);
    const shape = { rounds: 2, requests: 50, betweenSd: 0.05, withinSd: 0.3 };
    const v = compareSides([side("a", shape, rng), side("b", shape, rng)], { seed: 3, resamples: 100, unresolved: (s, m) => (s === 1 && m === "mean_itl_ms" ? "the client lagged" : undefined) });
    expect(v.entries.find((e) => e.metric === "mean_itl_ms")).toMatchObject({ call: "unresolved", note: "the client lagged", ci_low: null });
    expect(v.family).toBe(6);
  });

  test("rounds that completed nothing are left out; a side with none gets no entries", () => {
    const rng = createRng(6);
    const shape = { rounds: 3, requests: 40, betweenSd: 0.02, withinSd: 0.3 };
    const a = side("a", shape, rng);
    const b = side("b", shape, rng);
    const emptied = { ...b, rounds: [b.rounds[0]!, b.rounds[1]!, { requests: [], durationS: 1 }] };
    const v = compareSides([a, emptied], { seed: 6, resamples: 50 });
    expect(v.rounds).toEqual([3, 2]);
    expect(v.entries).toHaveLength(7);
    expect(v.entries.every((e) => e.ci_low !== null && Number.isFinite(e.ci_low))).toBe(true);
    const none = compareSides([a, { ...b, rounds: [{ requests: [], durationS: 1 }] }], { seed: 6, resamples: 50 });
    expect(none.entries).toEqual([]);
    expect(none.family).toBe(0);
  });

  test("a zero baseline (no reuse at all) is compared as a difference: no ratio, still called", () => {
    const rng = createRng(4);
    const shape = { rounds: 3, requests: 80, betweenSd: 0.02, withinSd: 0.3 };
    const v = compareSides([side("rr", { ...shape, reuse: 0 }, rng), side("kv", { ...shape, reuse: 0.7 }, rng)], { seed: 4, resamples: 100 });
    const reuse = v.entries.find((e) => e.metric === "prefix_cache_reuse_ratio")!;
    expect(reuse).toMatchObject({ ratio: null, ci_low: null, call: "higher", baseline_value: 0 });
  });

  test("the sample-size check: a small noisy run says what would show 10 %, a large quiet one says nothing", () => {
    const rng = createRng(8);
    const small = { rounds: 1, requests: 40, betweenSd: 0, withinSd: 0.4 };
    const v = compareSides([side("a", small, rng), side("b", small, rng)], { seed: 8, resamples: 100 });
    const ttft = v.entries.find((e) => e.metric === "mean_ttft_ms")!;
    expect(ttft.min_detectable!).toBeGreaterThan(0.1);
    expect(ttft.would_need!.requests_per_round!).toBeGreaterThan(40);
    expect(ttft.would_need!.rounds!).toBeGreaterThan(1);
    const large = { rounds: 5, requests: 400, betweenSd: 0.005, withinSd: 0.2 };
    const w = compareSides([side("a", large, rng), side("b", large, rng)], { seed: 8, resamples: 100 });
    const quiet = w.entries.find((e) => e.metric === "mean_ttft_ms")!;
    expect(quiet.min_detectable!).toBeLessThan(0.1);
    expect(quiet.would_need).toBeUndefined();
  });

  test("a round of a dozen requests is too few to tell: nothing is called, even a 2× shift, and it says so", () => {
    const rng = createRng(13);
    const tiny = { rounds: 1, requests: 12, betweenSd: 0, withinSd: 0.1 };
    const v = compareSides([side("a", tiny, rng), side("b", { ...tiny, shift: 2 }, rng)], { seed: 13, resamples: 50 });
    expect(v.family).toBe(0);
    for (const e of v.entries) expect(e).toMatchObject({ call: "no clear difference", ci_low: null, note: "too few requests to tell: 12 in a round, at least 30 are needed" });
  });

  test("stack-to-stack spread cannot be bought off with requests: only rounds would do", () => {
    const rng = createRng(12);
    const shape = { rounds: 3, requests: 200, betweenSd: 0.3, withinSd: 0.1 };
    const v = compareSides([side("a", shape, rng), side("b", shape, rng)], { seed: 12, resamples: 100 });
    const ttft = v.entries.find((e) => e.metric === "mean_ttft_ms")!;
    expect(ttft.min_detectable!).toBeGreaterThan(0.1);
    expect(ttft.would_need!.rounds!).toBeGreaterThan(3);
    expect(ttft.would_need!.requests_per_round).toBeUndefined();
  });

  test("reproducible: the same samples and seed give the same verdict, another seed only moves the intervals slightly", () => {
    const rng = createRng(21);
    const shape = { rounds: 3, requests: 60, betweenSd: 0.05, withinSd: 0.4 };
    const sides = [side("a", shape, rng), side("b", { ...shape, shift: 1.1 }, rng)];
    expect(compareSides(sides, { seed: 7, resamples: 100 })).toEqual(compareSides(sides, { seed: 7, resamples: 100 }));
    const [x, y] = [compareSides(sides, { seed: 7, resamples: 200 }), compareSides(sides, { seed: 8, resamples: 200 })];
    x.entries.forEach((e, i) => expect(Math.abs(Math.log(e.ci_high! / y.entries[i]!.ci_high!))).toBeLessThan(0.05));
  });
});
