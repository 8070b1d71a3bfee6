import { describe, expect, test } from "bun:test";
import { agreement, PrefixHoldings, wilson } from "./agreement.ts";

describe("routing agreement between two fleets", () => {
  test("workers pair on first use; a unique decision agrees when its choices are paired or both new", () => {
    const got = agreement([
      { a: "w0", b: "x7", unique: false }, // a tie: pairs w0 with x7
      { a: "w0", b: "x7", unique: true }, // paired: agrees
      { a: "w1", b: "x3", unique: true }, // both new: pairs, agrees
      { a: "w1", b: "x7", unique: true }, // x7 is w0's: disagrees
      { a: "w2", b: "x3", unique: false }, // a tie on a paired b: counted apart, not agreed
      { a: "w1", b: "x3", unique: false }, // a tie landing on the pair
    ]);
    expect(got).toMatchObject({ counted: 3, agreed: 2, ties: 3, tiesAgreed: 1 });
    expect(got.share).toBeCloseTo(2 / 3);
  });

  test("the Wilson interval holds the share, narrows with n, and stays in [0, 1]", () => {
    const small = wilson(19, 20), large = wilson(190, 200);
    expect(small.low).toBeLessThan(0.95);
    expect(small.high).toBeLessThanOrEqual(1);
    expect(large.high - large.low).toBeLessThan(small.high - small.low);
    expect(wilson(0, 10).low).toBe(0);
    expect(wilson(0, 0)).toMatchObject({ low: 0, high: 1 });
  });

  test("the best worker is unique where one alone holds the longest cached prefix", () => {
    const h = new PrefixHoldings(2);
    const p = h.blocks([1, 2, 3, 4, 5]);
    expect(p).toHaveLength(2); // full blocks only
    expect(h.blocks([1, 2, 9, 9])[0]).toBe(p[0]!); // a shared first block, chained
    expect(h.blocks([1, 2, 9, 9])[1]).not.toBe(p[1]!);
    expect(h.uniqueBest(p, ["a", "b"])).toBe(false); // nothing cached: a tie
    h.served("a", h.blocks([1, 2, 9, 9]));
    expect(h.uniqueBest(p, ["a", "b"])).toBe(true); // a holds one block, b none
    h.served("b", p);
    expect(h.uniqueBest(p, ["a", "b"])).toBe(true); // b holds both
    h.served("a", p);
    expect(h.uniqueBest(p, ["a", "b"])).toBe(false);
  });
});
