// The verdict of a comparison: for each side against the baseline (the first side) and each
// figure, the ratio side / baseline with an interval and a call — "lower", "higher" or "no clear
// difference". Uncertainty comes from both levels (rounds, then requests within each round:
// spread.ts); the interval is a t interval on the log scale with Satterthwaite's degrees of
// freedom, so a few rounds give the wide interval a few rounds deserve; Holm's step-down keeps the
// chance of calling any difference between identical setups at `alpha` over the whole family.
import { createRng } from "../random/rng.ts";
import { designsFor, differenceVariance, minDetectable } from "./sample-size.ts";
import { allPositive, componentsOf, pairedComponentsOf, spreadOf, type Components, type SideSpread } from "./spread.ts";
import { VERDICT_METRICS, type SideSamples, type VerdictMetric } from "./run-samples.ts";
import { tQuantile, tTwoSidedP } from "./t-distribution.ts";

export type Call = "lower" | "higher" | "no clear difference" | "unresolved";

/**
 * Below this many completed requests in a round, resampling them says little about the next run
 * (a burst of a dozen requests shares one stack state): figures are not called.
 */
export const MIN_REQUESTS_PER_ROUND = 30;

export interface VerdictEntry {
  metric: VerdictMetric;
  baseline: string;
  side: string;
  baseline_value: number;
  side_value: number;
  /**
   * side / baseline: over several rounds the geometric mean of the rounds' ratios (each round
   * weighs the same), otherwise of the pooled figures; null when the baseline's figure is 0.
   */
  ratio: number | null;
  ci_low: number | null;
  ci_high: number | null;
  call: Call;
  /** The interval's confidence (Holm's level for this test; 0.95 for a family of one). */
  confidence: number | null;
  /** Two-sided p-value of this test alone (before Holm). */
  p_value: number | null;
  /** Smallest change these runs could show (a fraction; 80 % power at the family's strictest level). */
  min_detectable: number | null;
  /** When min_detectable is above the change asked about: rounds per side, or requests per round, that would show it. */
  would_need?: { rounds?: number; requests_per_round?: number };
  /** Why there is no interval, or what it does not cover. */
  note?: string;
}

export interface VerdictOptions {
  /** Seeds the bootstrap (the same samples and seed give the same verdict). */
  seed: number;
  /** Family-wise error rate (default 0.05). */
  alpha?: number;
  /** The change the sample-size check asks about (default 0.1 = 10 %). */
  targetChange?: number;
  /** Why a side's figure (`value`, pooled) cannot be compared (the client could not time it), if so. */
  unresolved?(side: number, metric: VerdictMetric, value: number): string | undefined;
  /** Bootstrap resamples per round (default spread.ts's). */
  resamples?: number;
  /** Default MIN_REQUESTS_PER_ROUND. */
  minRequestsPerRound?: number;
  /**
   * Round k of every side ran together (interleaved, the same workload): compare round by round,
   * so drift between rounds cancels. Applies to sides with equally many rounds (at least 2).
   */
  paired?: boolean;
}

export interface Verdict {
  entries: VerdictEntry[];
  /** The sides, baseline first. */
  sides: string[];
  /** Rounds per side that completed requests, in side order. */
  rounds: number[];
  /** Tests in Holm's family. */
  family: number;
  /** Every side ran one round: the intervals cover request noise only, not stack-to-stack. */
  requestNoiseOnly: boolean;
  /** Rounds were compared pairwise (round k of each side against each other). */
  paired: boolean;
}

interface Test {
  entry: VerdictEntry;
  /** Difference on the comparison's scale (log ratio, or side − baseline) and its standard error. */
  diff: number;
  se: number;
  df: number;
  p: number;
  log: boolean;
  /** The variance split the difference rests on (one entry when paired, one per side otherwise). */
  comps: Components[];
  /** The baseline's figure as measured (the denominator of a difference's ratio). */
  base: number;
}

export function compareSides(sides: readonly SideSamples[], o: VerdictOptions): Verdict {
  const alpha = o.alpha ?? 0.05;
  const target = o.targetChange ?? 0.1;
  const rng = createRng(o.seed);
  // A round that completed no request has no figures to weigh (its failures are the run's to report).
  const spreads = sides.map((s) => spreadOf({ ...s, rounds: s.rounds.filter((r) => r.requests.length > 0) }, rng, o.resamples));
  const entries: VerdictEntry[] = [];
  const tests: Test[] = [];
  const base = spreads[0];
  const pairedWith = (side: SideSpread) => o.paired === true && base !== undefined && base.rounds >= 2 && side.rounds === base.rounds && spreads.every((x) => x.rounds === base.rounds);
  for (let s = 1; base && base.rounds > 0 && s < spreads.length; s++) {
    const side = spreads[s]!;
    if (side.rounds === 0) continue;
    VERDICT_METRICS.forEach((metric, m) => {
      const a = base.pooled[m]!;
      const b = side.pooled[m]!;
      if (!Number.isFinite(a) || !Number.isFinite(b)) return; // not reported (no cached_tokens, no streamed tokens)
      const entry: VerdictEntry = { metric: metric.key, baseline: base.label, side: side.label, baseline_value: a, side_value: b, ratio: a !== 0 ? b / a : null, ci_low: null, ci_high: null, call: "no clear difference", confidence: null, p_value: null, min_detectable: null };
      entries.push(entry);
      const why = o.unresolved?.(0, metric.key, a) ?? o.unresolved?.(s, metric.key, b);
      if (why !== undefined) {
        entry.call = "unresolved";
        entry.note = why;
        return;
      }
      const fewest = Math.min(base.fewestRequests, side.fewestRequests);
      if (fewest < (o.minRequestsPerRound ?? MIN_REQUESTS_PER_ROUND)) {
        entry.note = `too few requests to tell: ${fewest} in a round, at least ${o.minRequestsPerRound ?? MIN_REQUESTS_PER_ROUND} are needed`;
        return;
      }
      if ("runLevel" in metric && Math.min(base.rounds, side.rounds) < 2) {
        entry.note = "a whole-run figure needs at least 2 rounds per side for an interval";
        return;
      }
      const log = allPositive(base, m) && allPositive(side, m);
      const comps = pairedWith(side) ? [pairedComponentsOf(base, side, m, log)] : [componentsOf(base, m, log), componentsOf(side, m, log)];
      const { variance, df } = differenceVariance(comps);
      const diff = comps.length === 1 ? comps[0]!.value : comps[1]!.value - comps[0]!.value;
      const se = Math.sqrt(variance);
      const p = se > 0 ? tTwoSidedP(diff / se, df) : diff === 0 ? 1 : 0;
      entry.p_value = p;
      const baseRaw = log ? Math.exp(componentsOf(base, m, true).value) : componentsOf(base, m, false).value;
      entry.ratio = log ? Math.exp(diff) : baseRaw !== 0 ? (baseRaw + diff) / baseRaw : null;
      tests.push({ entry, diff, se, df, p, log, comps, base: baseRaw });
    });
  }
  holm(tests, alpha);
  const family = tests.length;
  for (const t of tests) {
    const comps = t.comps;
    // "Could show" holds at the strictest level any test of the family faced (Bonferroni's).
    const strictest = alpha / Math.max(1, family);
    const mdd = minDetectable(comps, strictest, t.log, t.base);
    t.entry.min_detectable = Number.isFinite(mdd) ? mdd : null;
    if (mdd > target && t.entry.call === "no clear difference") {
      const need = designsFor(comps, strictest, t.log, t.base, target);
      t.entry.would_need = { ...(need.rounds !== undefined ? { rounds: need.rounds } : {}), ...(need.requestsPerRound !== undefined ? { requests_per_round: need.requestsPerRound } : {}) };
    }
  }
  const requestNoiseOnly = spreads.every((s) => s.rounds <= 1);
  if (requestNoiseOnly) for (const t of tests) t.entry.note ??= "one round per side: the interval covers request noise only, not the spread between stacks";
  const paired = spreads.slice(1).some((s) => pairedWith(s));
  return { entries, sides: sides.map((s) => s.label), rounds: spreads.map((s) => s.rounds), family, requestNoiseOnly, paired };
}

/**
 * Holm's step-down: the k-th smallest p-value is tested at alpha / (family − k + 1) until one
 * fails; that one and every later test keep the failing level. Each interval is drawn at its
 * test's level, so "the interval excludes 1" and "called" always agree.
 */
function holm(tests: Test[], alpha: number): void {
  const order = [...tests].sort((x, y) => x.p - y.p);
  let level = alpha / Math.max(1, order.length);
  let failed = false;
  order.forEach((t, k) => {
    if (!failed) level = alpha / (order.length - k);
    const rejected = !failed && t.p <= level;
    if (!rejected) failed = true;
    const half = t.se > 0 ? tQuantile(1 - level / 2, t.df) * t.se : 0;
    const e = t.entry;
    e.confidence = 1 - level;
    if (t.log) {
      e.ci_low = Math.exp(t.diff - half);
      e.ci_high = Math.exp(t.diff + half);
    } else if (t.base !== 0) {
      e.ci_low = (t.base + t.diff - half) / t.base;
      e.ci_high = (t.base + t.diff + half) / t.base;
    }
    e.call = rejected ? (t.diff > 0 ? "higher" : "lower") : "no clear difference";
  });
}
