import { describe, expect, test } from "bun:test";
import { createRng } from "../random/rng.ts";
import { arrivalTimesMs } from "./arrivals.ts";
import type { WorkloadRequest } from "./workload.ts";

const many = (n: number) => Array.from({ length: n }, () => ({ timestampMs: 0, inputLength: 1, outputLength: 1, writeTokens: () => {} }) as WorkloadRequest);

function gaps(burstiness: number, rate = 10, n = 20_000, seed = 7): number[] {
  const t = arrivalTimesMs(many(n), { kind: "rate", requestsPerSecond: rate, burstiness }, createRng(seed))!;
  return Array.from({ length: n - 1 }, (_, i) => t[i + 1]! - t[i]!);
}

const meanOf = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
const cvOf = (xs: number[]) => {
  const m = meanOf(xs);
  return Math.sqrt(meanOf(xs.map((x) => (x - m) ** 2))) / m;
};

describe("gamma arrivals (vLLM's --burstiness)", () => {
  for (const b of [0.25, 0.5, 1, 2, 4]) {
    test(`burstiness ${b}: mean gap 1/rate, coefficient of variation 1/sqrt(${b})`, () => {
      const g = gaps(b);
      // 20,000 gaps: the sample mean and CV are within a few percent of the distribution's.
      expect(meanOf(g) / 100).toBeGreaterThan(0.95);
      expect(meanOf(g) / 100).toBeLessThan(1.05);
      expect(cvOf(g) * Math.sqrt(b)).toBeGreaterThan(0.93);
      expect(cvOf(g) * Math.sqrt(b)).toBeLessThan(1.07);
    });
  }

  test("seeded; burstiness 1 keeps the Poisson stream arrivals had before", () => {
    expect(gaps(0.5, 10, 100, 3)).toEqual(gaps(0.5, 10, 100, 3));
    const poisson = arrivalTimesMs(many(50), { kind: "rate", requestsPerSecond: 10 }, createRng(3))!;
    expect([...arrivalTimesMs(many(50), { kind: "rate", requestsPerSecond: 10, burstiness: 1 }, createRng(3))!]).toEqual([...poisson]);
  });

  test("infinite burstiness spaces arrivals evenly; an infinite rate sends all at 0", () => {
    expect(new Set(gaps(Infinity, 4, 10).map((g) => g.toFixed(9)))).toEqual(new Set(["250.000000000"]));
    expect([...arrivalTimesMs(many(5), { kind: "rate", requestsPerSecond: Infinity }, createRng(0))!]).toEqual([0, 0, 0, 0, 0]);
  });

  test("scaled to the rate as vLLM scales its schedule: the last of n arrivals at (n − 1) / rate", () => {
    const t = arrivalTimesMs(many(101), { kind: "rate", requestsPerSecond: 20, burstiness: 0.3, scaleToRate: true }, createRng(9))!;
    expect(t[0]).toBe(0);
    expect(t[100]).toBeCloseTo(5000, 6);
  });
});
