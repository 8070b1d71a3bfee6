import { describe, expect, test } from "bun:test";
import { agreement, PrefixHoldings, wilson } from "./agreement.ts";

describe("routing agreement between two fleets", () => {
  const v = (chosenDepth: number, bestDepth: number, unique = true) => ({ chosenDepth, bestDepth, unique });

  test("a decision agrees when both routers chose their fleet's longest holder, or workers holding the same length; ties apart", () => {
    const got = agreement([
      { a: v(3, 3), b: v(3, 3) }, // both the holder
      { a: v(2, 2), b: v(5, 5) }, // both the holder, the fleets holding different lengths (a tie broke apart earlier)
      { a: v(3, 3), b: v(0, 3) }, // b missed its holder
      { a: v(1, 3), b: v(1, 3) }, // both missed it the same way
      { a: v(0, 0, false), b: v(0, 0, false) }, // a new prefix: a tie
      { a: v(2, 2), b: v(0, 0, false) }, // a tie in one fleet is a tie
    ]);
    expect(got).toMatchObject({ counted: 4, agreed: 3, ties: 2 });
    expect(got.share).toBeCloseTo(3 / 4);
  });

  test("the Wilson interval holds the share, narrows with n, and stays in [0, 1]", () => {
    const small = wilson(19, 20), large = wilson(190, 200);
    expect(small.low).toBeLessThan(0.95);
    expect(small.high).toBeLessThanOrEqual(1);
    expect(large.high - large.low).toBeLessThan(small.high - small.low);
    expect(wilson(0, 10).low).toBe(0);
    expect(wilson(0, 0)).toMatchObject({ low: 0, high: 1 });
  });

  test("a fleet's view: the prefix length its chosen worker holds, the longest any holds, and whether one alone holds it", () => {
    const h = new PrefixHoldings(2);
    const p = h.blocks([1, 2, 3, 4, 5]);
    expect(p).toHaveLength(2); // full blocks only
    expect(h.blocks([1, 2, 9, 9])[0]).toBe(p[0]!); // a shared first block, chained
    expect(h.blocks([1, 2, 9, 9])[1]).not.toBe(p[1]!);
    expect(h.view(p, "a", ["a", "b"])).toEqual({ chosenDepth: 0, bestDepth: 0, unique: false }); // nothing cached: a tie
    h.served("a", h.blocks([1, 2, 9, 9]));
    expect(h.view(p, "b", ["a", "b"])).toEqual({ chosenDepth: 0, bestDepth: 1, unique: true }); // a holds one block, b none
    h.served("b", p);
    expect(h.view(p, "b", ["a", "b"])).toEqual({ chosenDepth: 2, bestDepth: 2, unique: true });
    h.served("a", p);
    expect(h.view(p, "a", ["a", "b"]).unique).toBe(false);
  });
});
