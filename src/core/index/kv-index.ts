// Which rank (one (worker, rank), by its numeric rank id) holds which blocks, one tier index per
// tier (device, host, disk), fed by KV events: the residency a router prices prefixes against.
// A sequence hash names a whole prefix (it chains every block before it), so a set keyed by it is a
// radix tree flattened: node = sequence hash, children implied by the parent chain. Per tier, two
// views (tier-index.ts): per rank, the hashes it holds (removals, footprints, clears); per hash,
// the ranks holding it (the inverted view a walk reads: a decision touches the prompt's ≤ N nodes
// and their holders, never one map per candidate; with 1,000 candidates the per-candidate lookups
// were the whole cost of a decision, bench/router-decision.ts).
import type { KvTier } from "../kv/kv-events.ts";
import { SPLIT, splitU64, type U64Map } from "../kv/u64-map.ts";
import { PrefixWalker, type Walk } from "./prefix-walk.ts";
import { type RankSet, TierIndex } from "./tier-index.ts";

/** Index tiers: the engine's two plus disk, which other publishers (and agents) report. */
export type IndexTier = KvTier | "disk";

/** The part of a KV event (engine or router event) the index needs. */
export interface IndexEvent {
  readonly kind: "stored" | "removed" | "cleared";
  readonly tier?: IndexTier;
  readonly blockHashes?: readonly bigint[];
  /** A store's parent block; a store whose parent the rank does not hold is an orphan (dropped). */
  readonly parentHash?: bigint | null;
}

export class KvIndex {
  private readonly tiers: Record<IndexTier, TierIndex>;
  /** Removals of blocks the index did not hold (events out of order or lost). */
  unknownRemovals = 0;
  /** Stores dropped because the rank held no block they chain from (events lost or joined late). */
  orphanStores = 0;
  private active: number[] = [];
  private sets: (U64Map | undefined)[] = [];
  private readonly walker = new PrefixWalker();

  constructor() {
    this.tiers = { device: new TierIndex(), host: new TierIndex(), disk: new TierIndex() };
  }

  apply(rankId: number, event: IndexEvent): void {
    if (event.kind === "cleared") {
      // Engine events clear every tier; router events (protocol/router-events.ts) clear one.
      if (event.tier === undefined) this.removeRank(rankId);
      else this.clearTier(rankId, event.tier);
      return;
    }
    const tier = this.tiers[event.tier ?? "device"];
    const hashes = event.blockHashes ?? [];
    if (hashes.length === 0) return;
    if (event.kind === "stored") {
      // As Dynamo's radix tree: a chain that starts at an unknown parent can never be matched from
      // block 0, so it is dropped and counted rather than kept as an unreachable orphan.
      if (event.parentHash != null && !this.holds(rankId, event.parentHash)) {
        this.orphanStores++;
        return;
      }
      if (!this.walker.fits(rankId)) this.walker.grow(rankId);
      if (rankId >= tier.counts.length) tier.grow(rankId);
      const own = tier.own(rankId);
      // Each block chains from the one before it (the first from the parent): store links them.
      let prev = -1;
      if (event.parentHash != null) {
        splitU64(event.parentHash);
        prev = tier.listOf(SPLIT[0]!, SPLIT[1]!);
      }
      for (const h of hashes) {
        splitU64(h);
        prev = tier.store(own, rankId, SPLIT[0]!, SPLIT[1]!, prev);
      }
    } else {
      const set = tier.byRank.get(rankId);
      if (set === undefined) {
        this.unknownRemovals += hashes.length;
        return;
      }
      for (const h of hashes) {
        splitU64(h);
        if (!tier.remove(set, rankId, SPLIT[0]!, SPLIT[1]!)) this.unknownRemovals++;
      }
    }
  }

  applyAll(rankId: number, events: readonly IndexEvent[]): void {
    for (const e of events) this.apply(rankId, e);
  }

  /** Whether the rank holds the block in any tier. */
  holds(rankId: number, hash: bigint): boolean {
    splitU64(hash);
    const w0 = SPLIT[0]!;
    const w1 = SPLIT[1]!;
    const { device, host, disk } = this.tiers;
    return device.byRank.get(rankId)?.has(w0, w1) === true || host.byRank.get(rankId)?.has(w0, w1) === true || disk.byRank.get(rankId)?.has(w0, w1) === true;
  }

  /** Sizes the per-rank arrays for ids up to `rankId`, so reads by a candidate's id stay in range. */
  reserve(rankId: number): void {
    if (!this.walker.fits(rankId)) this.walker.grow(rankId);
    const { device, host, disk } = this.tiers; // no array per call: add() reaches this on every routed request
    if (rankId >= device.counts.length) device.grow(rankId);
    if (rankId >= host.counts.length) host.grow(rankId);
    if (rankId >= disk.counts.length) disk.grow(rankId);
  }

  /** Forgets everything a rank held (it left, or its stream was cleared). */
  removeRank(rankId: number): void {
    this.tiers.device.removeRank(rankId);
    this.tiers.host.removeRank(rankId);
    this.tiers.disk.removeRank(rankId);
  }

  /** Forgets what a rank held in one tier (a per-tier `cleared` router event). */
  clearTier(rankId: number, tier: IndexTier): void {
    this.tiers[tier].removeRank(rankId);
  }

  /** Blocks held per tier over every rank (the /metrics index size). */
  size(tier: IndexTier): number {
    return this.tiers[tier].total;
  }

  /**
   * Per candidate: the longest device prefix of `seqHashes[0, count)`, then the contiguous host
   * continuation after it, then the contiguous disk continuation after that, written
   * to device/host/disk[candidate index]. Walks the prompt's blocks and their holder lists once per
   * tier: cost grows with the holders of the prompt's blocks, not with the candidate count.
   */
  overlaps(seqHashes: ArrayLike<bigint>, count: number, candidates: readonly number[], device: Int32Array, host: Int32Array, disk: Int32Array): void {
    const n = candidates.length;
    const q = this.beginOverlaps(seqHashes, count);
    const size = q.device.length;
    for (let c = 0; c < n; c++) {
      const s = candidates[c]!;
      if (s < size) {
        device[c] = q.device[s]!;
        host[c] = q.host[s]!;
        disk[c] = q.disk[s]!;
      } else device[c] = host[c] = disk[c] = 0;
    }
    this.endOverlaps();
  }

  /**
   * overlaps() by rank id, for a caller that reads every candidate once anyway (the router): the
   * three overlaps of rank s are at device/host/disk[s] of the returned walk (0 past their length)
   * until endOverlaps(), which must come before the next walk or event. With a `cover` (a set
   * every rank read is in), its ranks' device depths may come as max(device[s], floor) instead
   * (PrefixWalker.begin); the cover is used only while nothing is indexed below device.
   */
  beginOverlaps(seqHashes: ArrayLike<bigint>, count: number, cover?: RankSet): Walk {
    const { device, host, disk } = this.tiers;
    const lower = this.hasLowerTiers();
    return this.walker.begin(device, lower ? host : undefined, lower ? disk : undefined, seqHashes, count, lower ? undefined : cover);
  }

  /** Clears the per-rank scratch of beginOverlaps() (only the ranks the walk wrote). */
  endOverlaps(): void {
    this.walker.end(this.tiers.device);
  }

  /** Whether any block is indexed below device (host or disk): overlaps there can be non-zero. */
  hasLowerTiers(): boolean {
    return this.tiers.host.total > 0 || this.tiers.disk.total > 0;
  }

  /**
   * Longest device prefix of `seqHashes[0, count)` per candidate rank, written to
   * out[candidate index]. One pass: ranks drop out at their first miss.
   */
  deviceOverlaps(seqHashes: ArrayLike<bigint>, count: number, candidates: readonly number[], out: Int32Array): void {
    out.fill(0, 0, candidates.length);
    const byRank = this.tiers.device.byRank;
    const sets = this.sets;
    const active = this.active;
    active.length = 0;
    sets.length = candidates.length;
    for (let c = 0; c < candidates.length; c++) {
      const set = byRank.get(candidates[c]!);
      sets[c] = set;
      if (set !== undefined && set.size > 0) active.push(c);
    }
    if (active.length === 0) return;
    const words = this.walker.wordsOf(seqHashes, count);
    for (let i = 0; i < count && active.length > 0; i++) {
      const w0 = words[2 * i]!;
      const w1 = words[2 * i + 1]!;
      let kept = 0;
      for (let a = 0; a < active.length; a++) {
        const c = active[a]!;
        if (sets[c]!.has(w0, w1)) {
          out[c] = i + 1;
          active[kept++] = c;
        }
      }
      active.length = kept;
    }
  }

  /** Blocks from `from` on that rank `rankId` holds on `tier` contiguously (the G2 / disk continuation). */
  hostContinuation(rankId: number, seqHashes: ArrayLike<bigint>, from: number, count: number, tier: IndexTier = "host"): number {
    const set = this.tiers[tier].byRank.get(rankId);
    if (set === undefined || set.size === 0 || from >= count) return 0;
    let j = from;
    while (j < count && set.hasBig(seqHashes[j]!)) j++;
    return j - from;
  }

  /** Blocks a rank holds in a tier (the index footprint used to break ties). */
  footprint(rankId: number, tier: IndexTier = "device"): number {
    const counts = this.tiers[tier].counts;
    return rankId < counts.length ? counts[rankId]! : 0;
  }

  /** Every hash a rank holds in a tier, in no particular order (tests). */
  blocksOf(rankId: number, tier: IndexTier): bigint[] {
    return this.tiers[tier].byRank.get(rankId)?.keyList() ?? [];
  }
}
