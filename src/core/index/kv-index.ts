// Which source (worker rank, or later a cache owner) holds which blocks, one map per tier,
// fed by KV events. A sequence hash names a whole prefix (SPEC §4.1), so a set keyed by it is
// a radix tree flattened: node = sequence hash, children implied by the parent chain. One set
// per (tier, source), keyed by the hash's u32 words (u64-map.ts: no bigint hashing per block,
// the cost that dominated a kv-routed replay); matching walks the request's hashes in order.
import type { KvTier } from "../kv/kv-events.ts";

/** Index tiers: the engine's two plus disk, which other publishers (and agents) report (SPEC §5). */
export type IndexTier = KvTier | "disk";
import { SPLIT, splitU64, U64Map, wordsOf } from "../kv/u64-map.ts";

/** The part of a KV event (engine or router event) the index needs. */
export interface IndexEvent {
  readonly kind: "stored" | "removed" | "cleared";
  readonly tier?: IndexTier;
  readonly blockHashes?: readonly bigint[];
}

/** One tier: per source, the set of hashes it holds (a U64Map used as a set). */
class TierIndex {
  readonly bySource = new Map<number, U64Map>();

  own(source: number): U64Map {
    let set = this.bySource.get(source);
    if (set === undefined) this.bySource.set(source, (set = new U64Map()));
    return set;
  }
}

export class KvIndex {
  private readonly tiers: Record<IndexTier, TierIndex> = { device: new TierIndex(), host: new TierIndex(), disk: new TierIndex() };
  /** Removals of blocks the index did not hold (events out of order or lost). */
  unknownRemovals = 0;
  private active: number[] = [];
  private sets: (U64Map | undefined)[] = [];
  private queryWords = new Uint32Array(64);

  apply(source: number, event: IndexEvent): void {
    if (event.kind === "cleared") {
      // A tier-less clear (a stream reset) forgets the source in every tier; a tiered one clears that tier.
      if (event.tier === undefined) this.removeSource(source);
      else this.clearTier(source, event.tier);
      return;
    }
    const tier = this.tiers[event.tier ?? "device"];
    const hashes = event.blockHashes ?? [];
    if (hashes.length === 0) return;
    if (event.kind === "stored") {
      const own = tier.own(source);
      for (const h of hashes) {
        splitU64(h);
        own.setIfAbsent(SPLIT[0]!, SPLIT[1]!, 1);
      }
    } else {
      const own = tier.bySource.get(source);
      for (const h of hashes) {
        splitU64(h);
        if (own === undefined || own.delete(SPLIT[0]!, SPLIT[1]!) === -1) this.unknownRemovals++;
      }
    }
  }

  applyAll(source: number, events: readonly IndexEvent[]): void {
    for (const e of events) this.apply(source, e);
  }

  /** Forgets everything a source held (it left, or its stream was cleared). */
  removeSource(source: number): void {
    this.tiers.device.bySource.delete(source);
    this.tiers.host.bySource.delete(source);
    this.tiers.disk.bySource.delete(source);
  }

  /** Forgets what a source held in one tier (a per-tier `cleared` router event). */
  clearTier(source: number, tier: IndexTier): void {
    this.tiers[tier].bySource.delete(source);
  }

  /** Blocks held per tier over every source (the /metrics index size). */
  size(tier: IndexTier): number {
    let n = 0;
    for (const set of this.tiers[tier].bySource.values()) n += set.size;
    return n;
  }

  /**
   * Longest device prefix of `seqHashes[0, count)` per candidate source, written to
   * out[candidate index]. One pass: sources drop out at their first miss.
   */
  deviceOverlaps(seqHashes: ArrayLike<bigint>, count: number, candidates: readonly number[], out: Int32Array): void {
    out.fill(0, 0, candidates.length);
    const bySource = this.tiers.device.bySource;
    const sets = this.sets;
    const active = this.active;
    active.length = 0;
    sets.length = candidates.length;
    for (let c = 0; c < candidates.length; c++) {
      const set = bySource.get(candidates[c]!);
      sets[c] = set;
      if (set !== undefined && set.size > 0) active.push(c);
    }
    if (active.length === 0) return;
    const words = this.wordsOf(seqHashes, count);
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

  /** Blocks from `from` on that `source` holds on `tier` contiguously (the G2 / disk continuation). */
  hostContinuation(source: number, seqHashes: ArrayLike<bigint>, from: number, count: number, tier: IndexTier = "host"): number {
    const set = this.tiers[tier].bySource.get(source);
    if (set === undefined || set.size === 0 || from >= count) return 0;
    let j = from;
    while (j < count && set.hasBig(seqHashes[j]!)) j++;
    return j - from;
  }

  /** Blocks a source holds in a tier (the index footprint used to break ties). */
  footprint(source: number, tier: IndexTier = "device"): number {
    return this.tiers[tier].bySource.get(source)?.size ?? 0;
  }

  /** Every hash a source holds in a tier, in no particular order (tests). */
  blocksOf(source: number, tier: IndexTier): bigint[] {
    return this.tiers[tier].bySource.get(source)?.keyList() ?? [];
  }

  /** The first `count` hashes as u32 word pairs: a view when they already sit in a BigUint64Array. */
  private wordsOf(seqHashes: ArrayLike<bigint>, count: number): Uint32Array {
    if (seqHashes instanceof BigUint64Array) return wordsOf(seqHashes);
    if (this.queryWords.length < 2 * count) this.queryWords = new Uint32Array(2 * count);
    const words = this.queryWords;
    for (let i = 0; i < count; i++) {
      splitU64(seqHashes[i]!);
      words[2 * i] = SPLIT[0]!;
      words[2 * i + 1] = SPLIT[1]!;
    }
    return words;
  }
}
