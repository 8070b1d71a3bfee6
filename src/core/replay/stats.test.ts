import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { percentile, summarize } from "./stats.ts";

const reference = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  const pos = (q / 100) * (s.length - 1);
  const lo = Math.floor(pos);
  return s[lo]! + (s[Math.min(s.length - 1, lo + 1)]! - s[lo]!) * (pos - lo);
};

describe("stats", () => {
  test("no values: every figure 0", () => {
    expect(summarize(new Float64Array(0))).toEqual({ mean: 0, median: 0, std: 0, p50: 0, p90: 0, p99: 0 });
  });

  test("numpy linear percentiles", () => {
    expect(percentile(Float64Array.from([1, 2, 3, 4]), 50)).toBe(2.5);
    expect(percentile(Float64Array.from([10]), 99)).toBe(10);
    expect(percentile(new Float64Array(0), 50)).toBe(0);
    expect(summarize(Float64Array.from([4, 1, 3, 2]))).toEqual({ mean: 2.5, median: 2.5, std: Math.sqrt(1.25), p50: 2.5, p90: 3.7, p99: 3.9699999999999998 });
  });

  test("quickselect percentiles equal sorting (random and repetitive data)", () => {
    fc.assert(
      fc.property(fc.array(fc.oneof(fc.double({ min: -1e6, max: 1e6, noNaN: true }), fc.constantFrom(1, 2, 3)), { minLength: 1, maxLength: 300 }), fc.constantFrom(0, 50, 90, 99, 100), (xs, q) => {
        expect(percentile(Float64Array.from(xs), q)).toBeCloseTo(reference(xs, q), 6);
      }),
      { numRuns: 300, seed: 11 },
    );
  });
});
