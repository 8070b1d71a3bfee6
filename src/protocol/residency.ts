// Residency: which blocks each (worker, rank) holds per tier, one shape for every role that can say
// so (docs/http-api.md): the mocker's truth (`GET /v1/residency`, what its engines really hold),
// the agent's `GET /v1/snapshot` holders and the frontend's `GET /v1/index`. Any two of them can be
// diffed block by block. Hashes are decimal strings (a u64 does not fit a JSON number); blocks are
// sorted by seq hash.
import * as v from "valibot";

const u64String = v.pipe(v.string(), v.regex(/^(0|[1-9][0-9]{0,19})$/, "expected a u64 as a decimal string"));
const count = v.pipe(v.number(), v.integer(), v.minValue(0));

/** One resident block: its seq (router) hash and the publisher's local (raw) hash. */
export const ResidencyBlockSchema = v.object({ seq_hash: u64String, local_hash: u64String });
export type ResidencyBlock = v.InferOutput<typeof ResidencyBlockSchema>;

const blocks = v.array(ResidencyBlockSchema);
export const ResidencyTiersSchema = v.object({ device: blocks, host: blocks, disk: blocks });
export type ResidencyTiers = v.InferOutput<typeof ResidencyTiersSchema>;
export type ResidencyTier = keyof ResidencyTiers;
export const RESIDENCY_TIERS: readonly ResidencyTier[] = ["device", "host", "disk"];

export const ResidencyHolderSchema = v.object({
  worker_id: v.pipe(v.string(), v.nonEmpty()),
  dp_rank: count,
  /** The last raw event seq the listed state reflects (mocker; -1: nothing published yet). */
  seq: v.optional(v.pipe(v.number(), v.integer(), v.minValue(-1))),
  /** The router-event cursor the listed state reflects (agent, frontend). */
  cursor: v.optional(count),
  /** The worker's request URL (its discovery record's `request_url`): where its mocker answers. */
  url: v.optional(v.string()),
  /** Requests waiting or running on the rank at the read (mocker): its load, for load regret. */
  requests: v.optional(count),
  tiers: ResidencyTiersSchema,
});
export type ResidencyHolder = v.InferOutput<typeof ResidencyHolderSchema>;

export const ResidencySchema = v.object({ sources: v.array(ResidencyHolderSchema) });
export type Residency = v.InferOutput<typeof ResidencySchema>;

/** The seq hashes `holder` holds in `tier`, or in any tier when none is named. */
export function blockSetOf(holder: Pick<ResidencyHolder, "tiers">, tier?: ResidencyTier): Set<string> {
  const set = new Set<string>();
  for (const t of tier === undefined ? RESIDENCY_TIERS : [tier]) for (const b of holder.tiers[t]) set.add(b.seq_hash);
  return set;
}

/** A tier's blocks from (seq hash, local hash) pairs, in the shape's order (ascending seq hash). */
export function residencyBlocks(pairs: Iterable<readonly [seqHash: bigint, localHash: bigint]>): ResidencyBlock[] {
  return [...pairs].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)).map(([s, l]) => ({ seq_hash: s.toString(), local_hash: l.toString() }));
}

/** Matched blocks of one query per tier, counted as the router counts overlap. */
export interface TierOverlap {
  device: number;
  host: number;
  disk: number;
}

/**
 * The longest prefix of `seqHashes` held on device, then the contiguous run after it held on host,
 * then the run after that on disk (as the KV router's index counts a candidate's overlap).
 */
export function prefixOverlap<H>(seqHashes: readonly H[], holds: Record<ResidencyTier, (hash: H) => boolean>): TierOverlap {
  const out: TierOverlap = { device: 0, host: 0, disk: 0 };
  let i = 0;
  for (const tier of RESIDENCY_TIERS) {
    while (i < seqHashes.length && holds[tier](seqHashes[i]!)) {
      out[tier]++;
      i++;
    }
  }
  return out;
}
