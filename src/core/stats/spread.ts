// How much each figure of one side moves: between rounds (fresh stacks) and, by resampling each
// round's requests with replacement (a bootstrap), within a round. The verdict adds the two to get
// the uncertainty of the side's figure; the sample-size check scales them to other designs.
import type { Rng } from "../random/rng.ts";
import { columnsOf, figuresOf, METRIC_COUNT, VERDICT_METRICS, type RoundColumns, type SideSamples } from "./run-samples.ts";

/** Bootstrap resamples per round: the within-round variance to about ±7 %. */
export const WITHIN_RESAMPLES = 400;

export interface SideSpread {
  label: string;
  rounds: number;
  /** Mean completed requests per round. */
  requestsPerRound: number;
  /** Completed requests of its smallest round. */
  fewestRequests: number;
  /** The side's figures over all its rounds' requests together (the table's figures). */
  pooled: Float64Array;
  /** Per metric, each round's figure. */
  roundFigures: Float64Array[];
  /** Per metric, per round: its figure under each bootstrap resample of its requests. */
  withinDraws: Float64Array[][];
}

export function spreadOf(side: SideSamples, rng: Rng, resamples = WITHIN_RESAMPLES): SideSpread {
  const rounds = side.rounds.map(columnsOf);
  const biggest = Math.max(0, ...rounds.map((r) => r.n));
  const scratch = new Float64Array(rounds.reduce((s, r) => s + r.n, 0));
  const pooled = new Float64Array(METRIC_COUNT);
  figuresOf(rounds, rounds.map(() => undefined), pooled, scratch);
  const roundFigures = VERDICT_METRICS.map(() => new Float64Array(rounds.length));
  const withinDraws = VERDICT_METRICS.map(() => rounds.map(() => new Float64Array(resamples)));
  const out = new Float64Array(METRIC_COUNT);
  const pick = new Int32Array(biggest);
  rounds.forEach((r: RoundColumns, k) => {
    figuresOf([r], [undefined], out, scratch);
    for (let m = 0; m < METRIC_COUNT; m++) roundFigures[m]![k] = out[m]!;
    const sub = pick.subarray(0, r.n);
    for (let b = 0; b < resamples; b++) {
      for (let j = 0; j < r.n; j++) sub[j] = rng.int(r.n);
      figuresOf([r], [sub], out, scratch);
      for (let m = 0; m < METRIC_COUNT; m++) withinDraws[m]![k]![b] = out[m]!;
    }
  });
  return {
    label: side.label,
    rounds: rounds.length,
    requestsPerRound: rounds.length > 0 ? rounds.reduce((s, r) => s + r.n, 0) / rounds.length : 0,
    fewestRequests: rounds.length > 0 ? Math.min(...rounds.map((r) => r.n)) : 0,
    pooled,
    roundFigures,
    withinDraws,
  };
}

/** A side's figure on the scale a comparison is made on, with its variance split into its parts. */
export interface Components {
  /**
   * The side's figure on the scale (log, or as measured): the mean of its rounds' figures, so that
   * each round weighs the same as in the variance (a pooled figure would follow its longest or
   * slowest round); with one round, that round's.
   */
  value: number;
  /** Variance between rounds beyond what request noise explains (0 with one round: unknown). */
  between: number;
  /** Variance of one round's figure from its requests alone (mean over rounds). */
  within: number;
  rounds: number;
  requestsPerRound: number;
}

/**
 * The components of metric `m` on the log scale (`log`) or as measured. Between-round variance
 * is the rounds' sample variance less the request noise it already contains (method of moments,
 * floored at 0); a run-level metric has no request noise.
 */
export function componentsOf(s: SideSpread, m: number, log: boolean): Components {
  const f = log ? Math.log : (x: number) => x;
  const runLevel = "runLevel" in VERDICT_METRICS[m]!;
  const figures = Array.from(s.roundFigures[m]!, f);
  let within = 0;
  if (!runLevel) {
    for (const draws of s.withinDraws[m]!) within += variance(Array.from(draws, f));
    within /= Math.max(1, s.rounds);
  }
  const between = s.rounds >= 2 ? Math.max(0, variance(figures) - within) : 0;
  const value = figures.length >= 2 ? figures.reduce((x, y) => x + y, 0) / figures.length : f(s.pooled[m]!);
  return { value, between, within, rounds: s.rounds, requestsPerRound: s.requestsPerRound };
}

/**
 * The components of the difference side − baseline when round k of each ran together (same
 * workload, back to back): the spread of the per-round differences, less both sides' request
 * noise, is what the rounds add. Whatever drifted between rounds (the machine's load) hits both
 * sides of a round alike and cancels, which unpaired rounds cannot show.
 */
export function pairedComponentsOf(base: SideSpread, side: SideSpread, m: number, log: boolean): Components {
  const a = componentsOf(base, m, log);
  const b = componentsOf(side, m, log);
  const f = log ? Math.log : (x: number) => x;
  const diffs = Array.from(side.roundFigures[m]!, (x, k) => f(x) - f(base.roundFigures[m]![k]!));
  const within = a.within + b.within;
  const between = Math.max(0, variance(diffs) - within);
  return { value: diffs.reduce((x, y) => x + y, 0) / diffs.length, between, within, rounds: side.rounds, requestsPerRound: Math.min(a.requestsPerRound, b.requestsPerRound) };
}

/** Whether every figure metric `m` took (pooled, per round, every resample) is positive and finite: the log scale applies. */
export function allPositive(s: SideSpread, m: number): boolean {
  const ok = (x: number) => x > 0 && Number.isFinite(x);
  return ok(s.pooled[m]!) && s.roundFigures[m]!.every(ok) && s.withinDraws[m]!.every((d) => d.every(ok));
}

/** Sample variance (n − 1); 0 for fewer than two values. */
export function variance(xs: readonly number[]): number {
  if (xs.length < 2) return 0;
  const mean = xs.reduce((a, b) => a + b, 0) / xs.length;
  return xs.reduce((a, x) => a + (x - mean) ** 2, 0) / (xs.length - 1);
}
