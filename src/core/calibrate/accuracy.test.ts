import { describe, expect, test } from "bun:test";
import { accuracyOf, pearson } from "./accuracy.ts";

describe("accuracy of simulated request times", () => {
  test("MAPE, MPE, the statistics' errors and r, by hand", () => {
    const a = accuracyOf([100, 200, 400], [110, 180, 400]);
    expect(a.requests).toBe(3);
    expect(a.mapePct).toBeCloseTo(((0.1 + 0.1 + 0) / 3) * 100, 9);
    expect(a.mpePct).toBeCloseTo(((0.1 - 0.1 + 0) / 3) * 100, 9);
    expect(a.mean.observed).toBeCloseTo(700 / 3, 9);
    expect(a.mean.errorPct).toBeCloseTo(((690 - 700) / 700) * 100, 9);
    // numpy's p90 of [100, 200, 400]: 200 + 0.8 × 200.
    expect(a.p90.observed).toBeCloseTo(360, 9);
    expect(a.pearsonR).toBeCloseTo(pearson([100, 200, 400], [110, 180, 400]), 12);
  });

  test("pairs with no observed time or a non-finite simulated one are left out", () => {
    const a = accuracyOf([0, 100, NaN, 50], [5, 100, 3, NaN]);
    expect(a.requests).toBe(1);
    expect(a.mapePct).toBe(0);
    expect(a.pearsonR).toBeNaN();
  });

  test("pearson: perfect, inverse, and no spread", () => {
    expect(pearson([1, 2, 3], [2, 4, 6])).toBeCloseTo(1, 12);
    expect(pearson([1, 2, 3], [3, 2, 1])).toBeCloseTo(-1, 12);
    expect(pearson([1, 1, 1], [1, 2, 3])).toBeNaN();
  });
});
