import { describe, expect, test } from "bun:test";
import { pairedRatio } from "./paired-ratio.ts";

describe("pairedRatio", () => {
  test("the interval is exp(mean ± t(0.975, n − 1) · sd / √n) of the log ratios, worked by hand", () => {
    // log ratios ln 1.15, ln 1.2, ln 1.25; t(0.975, 2) = 4.302653.
    const logs = [Math.log(1.15), Math.log(1.2), Math.log(1.25)];
    const mean = (logs[0]! + logs[1]! + logs[2]!) / 3;
    const sd = Math.sqrt(logs.reduce((s, l) => s + (l - mean) ** 2, 0) / 2);
    const half = 4.302653 * (sd / Math.sqrt(3));
    const v = pairedRatio([115, 240, 375], [100, 200, 300], "higher");
    expect(v.ratio).toBeCloseTo(Math.exp(mean), 9);
    expect(v.low).toBeCloseTo(Math.exp(mean - half), 5);
    expect(v.high).toBeCloseTo(Math.exp(mean + half), 5);
    expect(v.low).toBeGreaterThan(1);
    expect(v.call).toBe("better");
    expect(pairedRatio([115, 240, 375], [100, 200, 300], "lower").call).toBe("worse");
  });

  test("a steady ratio below 1 is better for a figure where lower is better, worse where higher is", () => {
    expect(pairedRatio([80, 81, 79, 80], [100, 100, 100, 100], "lower").call).toBe("better");
    expect(pairedRatio([80, 81, 79, 80], [100, 100, 100, 100], "higher").call).toBe("worse");
  });

  test("pairs that straddle 1 are no clear difference, and equal pairs give exactly 1", () => {
    const v = pairedRatio([105, 95, 101], [100, 100, 100], "higher");
    expect(v.low).toBeLessThan(1);
    expect(v.high).toBeGreaterThan(1);
    expect(v.call).toBe("no clear difference");
    const same = pairedRatio([7, 9, 11], [7, 9, 11], "lower");
    expect([same.ratio, same.low, same.high, same.call]).toEqual([1, 1, 1, "no clear difference"]);
  });

  test("one pair, a zero or mismatched lengths cannot give a verdict", () => {
    expect(pairedRatio([2], [1], "higher").call).toBe("unresolved");
    expect(pairedRatio([2], [1], "higher").ratio).toBe(2);
    expect(pairedRatio([0, 1], [1, 1], "higher").call).toBe("unresolved");
    expect(pairedRatio([], [], "higher").call).toBe("unresolved");
    expect(() => pairedRatio([1, 2], [1], "higher")).toThrow("differ in length");
  });
});
