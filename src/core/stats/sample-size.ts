// The sample-size check: the smallest change a comparison could show at its spread (80 % power
// at the strictest level it is tested at), and, when that is above the change asked about (10 %),
// how many rounds per side or requests per round would show it, from the same variance split.
import type { Components } from "./spread.ts";
import { tQuantile } from "./t-distribution.ts";

export const DETECT_POWER = 0.8;
/** Designs searched: up to this many rounds per side, or this many times the requests per round. */
const MAX_ROUNDS = 200;
const MAX_REQUEST_FACTOR = 1000;

export interface Design {
  rounds: number;
  /** Requests per round as a multiple of those run. */
  requestFactor: number;
}

/**
 * Variance of the difference and its degrees of freedom (Welch–Satterthwaite over the sides) under
 * `design` (as run: rounds as they were, factor 1). A side whose rounds spread more than request
 * noise explains rests on that spread, known only to rounds − 1 degrees of freedom (a smooth split
 * would claim more: simulated A/A comparisons over 3 rounds then called differences 1 time in 10);
 * otherwise on its request noise, known to many.
 */
export function differenceVariance(sides: readonly Components[], design?: Design): { variance: number; df: number } {
  let variance = 0;
  let denom = 0;
  for (const s of sides) {
    const rounds = design ? Math.max(design.rounds, s.rounds) : s.rounds;
    const factor = design?.requestFactor ?? 1;
    const v = s.between / rounds + s.within / (rounds * factor);
    const df = s.between > 0 ? Math.max(1, rounds - 1) : Math.max(1, rounds * (s.requestsPerRound * factor - 1));
    variance += v;
    if (v > 0) denom += (v * v) / df;
  }
  return { variance, df: denom > 0 ? (variance * variance) / denom : Infinity };
}

/**
 * The smallest change (a fraction: 0.1 = 10 %) the design would show with 80 % power at
 * two-sided level `level`; on the log scale a change is a ratio, otherwise a difference relative
 * to `baseline` (the baseline's figure as measured).
 */
export function minDetectable(sides: readonly Components[], level: number, log: boolean, baseline: number, design?: Design): number {
  const { variance, df } = differenceVariance(sides, design);
  if (variance === 0) return 0;
  const reach = (tQuantile(1 - level / 2, df) + tQuantile(DETECT_POWER, df)) * Math.sqrt(variance);
  if (log) return Math.exp(reach) - 1;
  return baseline !== 0 ? reach / Math.abs(baseline) : Infinity;
}

/** Rounds per side (requests as run), and requests per round (rounds as run), that would show `target`; undefined where none searched would. */
export function designsFor(sides: readonly Components[], level: number, log: boolean, baseline: number, target: number): { rounds?: number; requestsPerRound?: number } {
  const runRounds = Math.max(...sides.map((s) => s.rounds));
  const shows = (d: Design) => minDetectable(sides, level, log, baseline, d) <= target;
  const out: { rounds?: number; requestsPerRound?: number } = {};
  // More of either only narrows the interval, so the least that would do is found by halving.
  const rounds = leastTrue(runRounds + 1, MAX_ROUNDS, (r) => shows({ rounds: r, requestFactor: 1 }));
  if (rounds !== undefined) out.rounds = rounds;
  // Requests help only against request noise; past the stacks' own spread no count is enough.
  const perRound = Math.max(...sides.map((s) => s.requestsPerRound));
  const requests = leastTrue(Math.ceil(perRound) + 1, Math.ceil(perRound * MAX_REQUEST_FACTOR), (n) => shows({ rounds: runRounds, requestFactor: n / perRound }));
  if (requests !== undefined) out.requestsPerRound = requests;
  return out;
}

/** The least integer in [lo, hi] where a monotone (false … true) predicate holds. */
function leastTrue(lo: number, hi: number, holds: (n: number) => boolean): number | undefined {
  if (lo > hi || !holds(hi)) return undefined;
  while (lo < hi) {
    const mid = Math.floor((lo + hi) / 2);
    if (holds(mid)) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}
