// Live routing regret (pure): each request's chosen (worker, rank) against the best one in the
// truth sample taken nearest before it started (the mockers' GET /v1/residency, sampled every S
// seconds), with the same arithmetic as replay's exact regret (src/core/routing/regret.ts).
import { prefillTimeMs, RegretTally, tieredOverlap, Tier, uncachedTokens, type PrefillTiming, type RegretSummary } from "../../core/routing/regret.ts";
import { blockSetOf, type Residency } from "../../protocol/residency.ts";
import type { TruthSample } from "../shared/stack/audit-loop.ts";

export type { RegretSummary } from "../../core/routing/regret.ts";

export interface RegretRequest {
  /** When the request was sent (s, on the samples' clock). */
  start_s: number;
  /** The prompt's full-block sequence hashes at the workers' block size. */
  seq_hashes: bigint[];
  /** The (worker, rank) that served it. */
  worker_id: string;
  dp_rank: number;
  /** Prompt tokens (for the prefill time); default: its full blocks × block size. */
  prompt_tokens?: number;
}

export type { TruthSample };

/** A sample's residency as hash-string sets per holder and tier, built once per sample used. */
interface SampleSets {
  keys: string[];
  tiers: [Set<string>, Set<string>, Set<string>][];
}

/**
 * The regret of every request that has a truth sample at or before its start (the others are
 * counted in `skipped_requests`). With `timing` (the workers' engine settings) the regret is also
 * given in prefill time. Throws RangeError on malformed input (bad block size, times, ranks).
 */
export function liveRegret(requests: readonly RegretRequest[], samples: readonly TruthSample[], blockSize: number, timing?: PrefillTiming): RegretSummary {
  if (!Number.isInteger(blockSize) || blockSize < 1) throw new RangeError(`liveRegret: blockSize must be an integer ≥ 1, got ${blockSize}`);
  samples.forEach((s, i) => {
    if (!Number.isFinite(s.t_s)) throw new RangeError(`liveRegret: samples[${i}].t_s must be a finite number, got ${s.t_s}`);
  });
  requests.forEach((r, i) => {
    if (!Number.isFinite(r.start_s)) throw new RangeError(`liveRegret: requests[${i}].start_s must be a finite number, got ${r.start_s}`);
    if (!Number.isInteger(r.dp_rank) || r.dp_rank < 0) throw new RangeError(`liveRegret: requests[${i}].dp_rank must be an integer ≥ 0, got ${r.dp_rank}`);
  });
  const sorted = [...samples].sort((a, b) => a.t_s - b.t_s);
  const sets: (SampleSets | undefined)[] = new Array(sorted.length);
  const tally = new RegretTally();
  let skipped = 0;
  let withLoad = false;
  for (const r of requests) {
    const at = lastAtOrBefore(sorted, r.start_s);
    if (at === -1) {
      skipped++;
      continue;
    }
    const sample = sorted[at]!;
    const s = (sets[at] ??= setsOf(sample.truth));
    const hashes = r.seq_hashes.map(String);
    const key = `${r.worker_id}/${r.dp_rank}`;
    let chosen = 0;
    let best = 0;
    for (let k = 0; k < s.keys.length; k++) {
      const tiers = s.tiers[k]!;
      const overlap = tieredOverlap(hashes.length, (tier: Tier, i) => tiers[tier].has(hashes[i]!));
      if (s.keys[k] === key) chosen = overlap;
      if (overlap > best) best = overlap;
    }
    let ms: number | undefined;
    if (timing !== undefined) {
      const isl = r.prompt_tokens ?? hashes.length * blockSize;
      ms = prefillTimeMs(uncachedTokens(isl, chosen, blockSize), timing) - prefillTimeMs(uncachedTokens(isl, best, blockSize), timing);
    }
    const load = sample.load;
    const mine = load?.[key];
    let least: number | undefined;
    if (load !== undefined && mine !== undefined) for (const v of Object.values(load)) least = least === undefined || v < least ? v : least;
    if (least !== undefined) withLoad = true;
    tally.push(best - chosen, ms, mine, least);
  }
  const out = tally.summary(samplingIntervalS(sorted), withLoad ? "requests waiting or running on the rank, as sampled" : undefined);
  out.skipped_requests = skipped;
  return out;
}

/** Index of the last sample taken at or before t (samples sorted by time), or -1. */
function lastAtOrBefore(sorted: readonly TruthSample[], t: number): number {
  let lo = 0;
  let hi = sorted.length; // first sample after t
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (sorted[mid]!.t_s <= t) lo = mid + 1;
    else hi = mid;
  }
  return lo - 1;
}

/** The median gap between samples (s): how old the truth a request is judged on may be. 0 with fewer than two. */
function samplingIntervalS(sorted: readonly TruthSample[]): number {
  if (sorted.length < 2) return 0;
  const gaps = sorted.slice(1).map((s, i) => s.t_s - sorted[i]!.t_s).sort((a, b) => a - b);
  return gaps[gaps.length >> 1]!;
}

function setsOf(truth: Residency): SampleSets {
  const keys: string[] = [];
  const tiers: [Set<string>, Set<string>, Set<string>][] = [];
  for (const src of truth.sources) {
    keys.push(`${src.worker_id}/${src.dp_rank}`);
    tiers.push([blockSetOf(src, "device"), blockSetOf(src, "host"), blockSetOf(src, "disk")]);
  }
  return { keys, tiers };
}
