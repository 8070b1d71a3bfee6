// Routing regret: how much cache (and load) a decision left on the table against the best
// (worker, rank) at the moment it was made, judged on true residency. One home for the arithmetic,
// used by replay (the oracle view: exact, every request) and by bench's live regret (the nearest truth sample).
// docs/DECISIONS.md "Regret and oracle" gives the definitions.
import { grown } from "../kv/grown.ts";
import { percentile } from "../replay/stats.ts";
import type { TimingProfile } from "../../protocol/timing-profile.ts";
import { polynomialPrefillMs, stepTimerOf, TimingModelKind, type StepTimer } from "../timing/timing-model.ts";

/** The engine settings its prefill time depends on (EngineConfig's names). */
export interface PrefillTiming {
  timingModel: TimingModelKind;
  /** Fixed model: time of a step that prefills anything. */
  prefillMs: number;
  maxNumBatchedTokens: number;
  /** Profile model: what prices its prefill part. */
  timingProfile?: TimingProfile;
}

/** One timer per profile; pricing never refuses (the run itself already did, or extrapolates). */
const pricing = new WeakMap<TimingProfile, StepTimer>();

/**
 * The engine's own time to prefill `tokens` alone: chunks of max_num_batched_tokens, each priced by
 * the step model's prefill part (polynomial fit, the fixed model's prefill_ms per chunk, or a
 * profile's prefill at the chunk's context). The
 * decode part and other requests sharing a step are left out: this prices the recompute only.
 */
export function prefillTimeMs(tokens: number, t: PrefillTiming): number {
  if (tokens <= 0) return 0;
  const chunk = t.maxNumBatchedTokens;
  const full = Math.floor(tokens / chunk);
  const rest = tokens - full * chunk;
  if (t.timingModel === TimingModelKind.fixed) return (full + (rest > 0 ? 1 : 0)) * t.prefillMs;
  if (t.timingModel === TimingModelKind.profile && t.timingProfile !== undefined) {
    let timer = pricing.get(t.timingProfile);
    if (timer === undefined) pricing.set(t.timingProfile, (timer = stepTimerOf(t.timingProfile, true)));
    let ms = 0;
    for (let done = 0; done < tokens; done += chunk) ms += timer.prefillMs(Math.min(chunk, tokens - done), done);
    return ms;
  }
  return full * polynomialPrefillMs(chunk) + polynomialPrefillMs(rest);
}

/** Tokens a prompt recomputes after a cached prefix of `overlapBlocks`: at least its last token (vLLM always computes it). */
export function uncachedTokens(promptTokens: number, overlapBlocks: number, blockSize: number): number {
  return Math.max(Math.min(1, promptTokens), promptTokens - overlapBlocks * blockSize);
}

export const Tier = { device: 0, host: 1, disk: 2 } as const;
export type Tier = (typeof Tier)[keyof typeof Tier];

/**
 * True overlap in blocks as the router counts it: the longest device prefix of the prompt's
 * `count` full blocks, then the contiguous host continuation, then the disk one. `has(tier, i)`
 * says whether block i is resident in the tier. Every tier counts whole (a host block is loaded,
 * not recomputed): regret is about recompute, not about the router's tier weights.
 */
export function tieredOverlap(count: number, has: (tier: Tier, block: number) => boolean): number {
  let i = 0;
  while (i < count && has(Tier.device, i)) i++;
  while (i < count && has(Tier.host, i)) i++;
  while (i < count && has(Tier.disk, i)) i++;
  return i;
}

/** One decision, judged against what the engines held at its moment (the oracle view or a truth sample). */
export interface RegretSample {
  /** True overlap (blocks) of the (worker, rank) chosen, and the best of any candidate. */
  chosenBlocks: number;
  bestBlocks: number;
  /** Extra prefill time the chosen overlap costs against the best (ms); absent without a timing model. */
  prefillMs?: number;
  /** The chosen candidate's load and the least-loaded candidate's, when load is known. */
  load?: { chosen: number; least: number };
}

export interface RegretHistogramBucket {
  /** Lower bound of the bucket: 0 alone, then [1, 2), [2, 4), [4, 8)… blocks. */
  bucket_blocks: number;
  count: number;
}

export interface LoadRegretSummary {
  /** What load counts (replay: requests waiting or running on the rank). */
  unit: string;
  /** Decisions whose load was known. */
  requests: number;
  /** Share of them routed to a least-loaded candidate (ties included). */
  least_loaded_share: number;
  /** Chosen load minus the least load, mean and p99. */
  mean: number;
  p99: number;
}

export interface RegretSummary {
  /** Decisions judged. */
  requests: number;
  /** Share routed to a candidate holding the best true overlap (ties included). */
  best_cache_share: number;
  /** Best true overlap minus the chosen one, in blocks. */
  mean_blocks: number;
  p99_blocks: number;
  /** The same in the engine's prefill time for the uncached tokens (ms). */
  mean_prefill_ms?: number;
  p99_prefill_ms?: number;
  histogram: RegretHistogramBucket[];
  /** How old the state a decision is judged on may be (s): 0 in replay (exact), the sampling interval live. */
  interval_s: number;
  /** Live: requests with no truth sample at or before their start (not judged). */
  skipped_requests?: number;
  load?: LoadRegretSummary;
}

/** Collects decisions (growable typed arrays: a replay judges millions) and summarises them. */
export class RegretTally {
  private blocks = new Float64Array(256);
  private ms = new Float64Array(256);
  private loads = new Float64Array(256);
  private n = 0;
  private nMs = 0;
  private nLoad = 0;
  private best = 0;
  private leastLoaded = 0;

  add(s: RegretSample): void {
    this.push(Math.max(0, s.bestBlocks - s.chosenBlocks), s.prefillMs, s.load?.chosen, s.load?.least);
  }

  /** add() without an object per decision (the replay hot path). */
  push(regretBlocks: number, prefillMs: number | undefined, loadChosen: number | undefined, loadLeast: number | undefined): void {
    if (this.n === this.blocks.length) this.blocks = grown(this.blocks, this.blocks.length * 2);
    this.blocks[this.n++] = regretBlocks;
    if (regretBlocks === 0) this.best++;
    if (prefillMs !== undefined) {
      if (this.nMs === this.ms.length) this.ms = grown(this.ms, this.ms.length * 2);
      this.ms[this.nMs++] = Math.max(0, prefillMs);
    }
    if (loadChosen !== undefined && loadLeast !== undefined) {
      if (this.nLoad === this.loads.length) this.loads = grown(this.loads, this.loads.length * 2);
      const extra = Math.max(0, loadChosen - loadLeast);
      this.loads[this.nLoad++] = extra;
      if (extra === 0) this.leastLoaded++;
    }
  }

  get size(): number {
    return this.n;
  }

  summary(intervalS: number, loadUnit?: string): RegretSummary {
    const blocks = this.blocks.subarray(0, this.n);
    const ms = this.ms.subarray(0, this.nMs);
    const loads = this.loads.subarray(0, this.nLoad);
    // Means and the histogram before the percentiles, which reorder in place; keys in the declared order.
    const meanBlocks = mean(blocks);
    const buckets = histogram(blocks);
    const out: RegretSummary = {
      requests: this.n,
      best_cache_share: this.n > 0 ? this.best / this.n : 1,
      mean_blocks: meanBlocks,
      p99_blocks: percentile(blocks, 99),
      ...(this.nMs > 0 ? { mean_prefill_ms: mean(ms), p99_prefill_ms: percentile(ms, 99) } : {}),
      histogram: buckets,
      interval_s: intervalS,
    };
    if (loadUnit !== undefined) {
      const meanLoad = mean(loads);
      out.load = { unit: loadUnit, requests: this.nLoad, least_loaded_share: this.nLoad > 0 ? this.leastLoaded / this.nLoad : 1, mean: meanLoad, p99: percentile(loads, 99) };
    }
    return out;
  }
}

/** Power-of-two buckets from 0 to the largest regret, empty ones in between kept (a chart's x axis). */
export function histogram(values: ArrayLike<number>): RegretHistogramBucket[] {
  const counts: number[] = [];
  for (let i = 0; i < values.length; i++) {
    const v = values[i]!;
    const b = v < 1 ? 0 : 1 + Math.floor(Math.log2(v));
    while (counts.length <= b) counts.push(0);
    counts[b]!++;
  }
  return counts.map((count, b) => ({ bucket_blocks: b === 0 ? 0 : 2 ** (b - 1), count }));
}

function mean(xs: Float64Array): number {
  if (xs.length === 0) return 0;
  let s = 0;
  for (let i = 0; i < xs.length; i++) s += xs[i]!;
  return s / xs.length;
}
