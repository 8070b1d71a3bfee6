import { describe, expect, test } from "bun:test";
import { nnls } from "./nnls.ts";

/** Q = AᵀA and c = Aᵀb for rows of A and b. */
function normal(rows: number[][], b: number[]): { Q: Float64Array; c: Float64Array; n: number } {
  const n = rows[0]!.length;
  const Q = new Float64Array(n * n);
  const c = new Float64Array(n);
  rows.forEach((r, i) => {
    for (let j = 0; j < n; j++) {
      c[j]! += r[j]! * b[i]!;
      for (let k = 0; k < n; k++) Q[j * n + k]! += r[j]! * r[k]!;
    }
  });
  return { Q, c, n };
}

describe("nnls", () => {
  test("an exact non-negative solution is found", () => {
    const rows = [[1, 0, 2], [0, 1, 1], [1, 1, 0], [2, 1, 1]];
    const truth = [3, 0.5, 2];
    const b = rows.map((r) => r.reduce((s, v, k) => s + v * truth[k]!, 0));
    const { Q, c, n } = normal(rows, b);
    expect(Array.from(nnls(Q, c, n))).toEqual(truth.map((v) => expect.closeTo(v, 9)));
  });

  test("a coefficient the data would make negative is held at zero, the rest refitted", () => {
    // b = 2·x1 − 1·x2: the best fit with x2 ≥ 0 is x2 = 0 and x1 by least squares.
    const rows = [[1, 0], [1, 1], [1, 2], [1, 3]];
    const b = rows.map((r) => 2 * r[0]! - r[1]!);
    const { Q, c, n } = normal(rows, b);
    const x = nnls(Q, c, n);
    expect(x[1]).toBe(0);
    expect(x[0]).toBeCloseTo((2 + 1 + 0 - 1) / 4, 9);
  });

  test("a column of zeros stays zero", () => {
    const rows = [[1, 0], [2, 0], [3, 0]];
    const { Q, c, n } = normal(rows, [2, 4, 6]);
    expect(Array.from(nnls(Q, c, n))).toEqual([expect.closeTo(2, 9), 0]);
  });
});
