// The verdict of an alternated A/B run: each pair of runs (one per build, in turns) gives a ratio
// A / B of one figure; the mean log ratio with Student's t interval over the pairs says whether A
// differs from B beyond the run-to-run noise, as a ratio with its 95 % interval. Log ratios, so
// 0.8× and 1.25× are equally far from 1 and a machine that drifts slower slows both sides of a pair.
import { tQuantile } from "../../src/core/stats/t-distribution.ts";
import type { Better } from "./figures.ts";

export interface RatioVerdict {
  /** exp(mean log ratio): the geometric mean of the pairs' A / B. */
  ratio: number;
  low: number;
  high: number;
  pairs: number;
  /** "better"/"worse" for A against B in the figure's own direction; "no clear difference" when the interval holds 1. */
  call: "better" | "worse" | "no clear difference" | "unresolved";
}

/** The 95 % verdict of A against B from paired values (aValues[i] and bValues[i] ran side by side). */
export function pairedRatio(aValues: readonly number[], bValues: readonly number[], better: Better): RatioVerdict {
  if (aValues.length !== bValues.length) throw new Error(`paired values differ in length: ${aValues.length} and ${bValues.length}`);
  const logs = aValues.map((a, i) => Math.log(a / bValues[i]!));
  const n = logs.length;
  if (n === 0 || logs.some((l) => !Number.isFinite(l))) return { ratio: NaN, low: NaN, high: NaN, pairs: n, call: "unresolved" };
  const mean = logs.reduce((s, l) => s + l, 0) / n;
  if (n < 2) return { ratio: Math.exp(mean), low: NaN, high: NaN, pairs: n, call: "unresolved" };
  const sd = Math.sqrt(logs.reduce((s, l) => s + (l - mean) ** 2, 0) / (n - 1));
  const half = tQuantile(0.975, n - 1) * (sd / Math.sqrt(n));
  const [low, high] = [Math.exp(mean - half), Math.exp(mean + half)];
  const above = low > 1;
  const below = high < 1;
  const call = !above && !below ? "no clear difference" : above === (better === "higher") ? "better" : "worse";
  return { ratio: Math.exp(mean), low, high, pairs: n, call };
}
