// Student's t against published table values, its symmetry, and the normal limit.
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { normalCdf, tCdf, tQuantile, tTwoSidedP } from "./t-distribution.ts";

describe("t distribution", () => {
  test("quantiles match the tables", () => {
    for (const [p, df, t] of [[0.975, 1, 12.706205], [0.975, 2, 4.302653], [0.975, 10, 2.228139], [0.995, 5, 4.032143], [0.9, 1, 3.077684], [0.8, 4, 0.940965], [0.975, Infinity, 1.959964], [0.999, Infinity, 3.090232]] as const) {
      expect(tQuantile(p, df)).toBeCloseTo(t, 5);
    }
  });

  test("the CDF matches the tables and its two-sided p-value", () => {
    expect(tCdf(2, 3)).toBeCloseTo(0.930337, 6);
    expect(tCdf(0, 7)).toBe(0.5);
    expect(normalCdf(-3)).toBeCloseTo(0.0013499, 6);
    expect(tTwoSidedP(2.228139, 10)).toBeCloseTo(0.05, 6);
    expect(tTwoSidedP(NaN, 3)).toBe(1);
  });

  test("the quantile inverts the CDF, symmetrically, at any degrees of freedom", () => {
    fc.assert(
      fc.property(fc.double({ min: 0.001, max: 0.999, noNaN: true }), fc.double({ min: 0.5, max: 1e6, noNaN: true }), (p, df) => {
        const t = tQuantile(p, df);
        expect(tCdf(t, df)).toBeCloseTo(p, 7);
        expect(tQuantile(1 - p, df)).toBeCloseTo(-t, 6);
      }),
      { seed: 1, numRuns: 200 },
    );
  });

  test("out-of-range input gives NaN, not a number that looks like an answer", () => {
    expect(tQuantile(0, 3)).toBeNaN();
    expect(tQuantile(1, 3)).toBeNaN();
    expect(tQuantile(0.5, 0)).toBeNaN();
    expect(tCdf(1, -1)).toBeNaN();
    expect(tCdf(1, 0)).toBeNaN(); // df must be above 0, not just non-negative
  });
});
