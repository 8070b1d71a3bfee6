// selectByCost against hand-computed picks: the lowest cost without touching the RNG when it is
// unique; with a temperature, the softmax over costs normalised by their span (Dynamo's KV router).
import { describe, expect, test } from "bun:test";
import type { Rng } from "../random/rng.ts";
import { selectByCost } from "./worker-selection.ts";

/** An RNG whose next() is fixed; int() must not be called. */
const fixed = (next: number): Rng => ({ next: () => next, int: () => { throw new Error("int() called"); } }) as unknown as Rng;

describe("selectByCost", () => {
  test("no candidates: -1", () => {
    expect(selectByCost([], 0, fixed(0))).toBe(-1);
    expect(selectByCost([1], 0, fixed(0))).toBe(-1);
  });

  test("a unique lowest cost wins without drawing from the RNG", () => {
    expect(selectByCost([3, 1, 2], 3, fixed(0))).toBe(1);
    expect(selectByCost([0, 1, 2], 3, fixed(0))).toBe(0);
  });

  test("temperature 1 on costs 10 and 11: weights 1 and e^-1 (span 1), so a draw of 0.6 picks the first, 0.8 the second", () => {
    // Cumulative share of the first: 1 / (1 + e^-1) ≈ 0.731.
    expect(selectByCost([10, 11], 2, fixed(0.6), 1)).toBe(0);
    expect(selectByCost([10, 11], 2, fixed(0.8), 1)).toBe(1);
  });
});
