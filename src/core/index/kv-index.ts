// Which source (worker rank, or later a cache owner) holds which blocks, one map per tier,
// fed by KV events. A sequence hash names a whole prefix (SPEC §4.1), so a map keyed by it is
// a radix tree flattened: node = sequence hash, children implied by the parent chain, and the
// per-source sets are the per-worker lookup. Matching walks the request's hashes in order.
import type { KvTier } from "../kv/kv-events.ts";

/** The part of a KV event (engine or router event) the index needs. */
export interface IndexEvent {
  readonly kind: "stored" | "removed" | "cleared";
  readonly tier?: KvTier;
  readonly blockHashes?: readonly bigint[];
}

class TierIndex {
  readonly holders = new Map<bigint, Set<number>>();
  readonly bySource = new Map<number, Set<bigint>>();

  add(source: number, hash: bigint): void {
    let set = this.holders.get(hash);
    if (set === undefined) this.holders.set(hash, (set = new Set()));
    set.add(source);
    let own = this.bySource.get(source);
    if (own === undefined) this.bySource.set(source, (own = new Set()));
    own.add(hash);
  }

  remove(source: number, hash: bigint): boolean {
    const set = this.holders.get(hash);
    if (set === undefined || !set.delete(source)) return false;
    if (set.size === 0) this.holders.delete(hash);
    this.bySource.get(source)?.delete(hash);
    return true;
  }

  clearSource(source: number): void {
    const own = this.bySource.get(source);
    if (own === undefined) return;
    for (const h of own) {
      const set = this.holders.get(h);
      if (set !== undefined && set.delete(source) && set.size === 0) this.holders.delete(h);
    }
    this.bySource.delete(source);
  }

  holds(source: number, hash: bigint): boolean {
    return this.holders.get(hash)?.has(source) ?? false;
  }
}

export class KvIndex {
  private readonly tiers: Record<KvTier, TierIndex> = { device: new TierIndex(), host: new TierIndex() };
  /** Removals of blocks the index did not hold (events out of order or lost). */
  unknownRemovals = 0;
  private active: number[] = [];

  apply(source: number, event: IndexEvent): void {
    if (event.kind === "cleared") {
      this.removeSource(source);
      return;
    }
    const tier = this.tiers[event.tier ?? "device"];
    const hashes = event.blockHashes ?? [];
    if (event.kind === "stored") for (const h of hashes) tier.add(source, h);
    else for (const h of hashes) if (!tier.remove(source, h)) this.unknownRemovals++;
  }

  applyAll(source: number, events: readonly IndexEvent[]): void {
    for (const e of events) this.apply(source, e);
  }

  /** Forgets everything a source held (it left, or its stream was cleared). */
  removeSource(source: number): void {
    this.tiers.device.clearSource(source);
    this.tiers.host.clearSource(source);
  }

  /**
   * Longest device prefix of `seqHashes[0, count)` per candidate source, written to
   * out[candidate index]. One pass: sources drop out at their first miss.
   */
  deviceOverlaps(seqHashes: ArrayLike<bigint>, count: number, candidates: readonly number[], out: Int32Array): void {
    out.fill(0, 0, candidates.length);
    const holders = this.tiers.device.holders;
    let active = this.active;
    active.length = 0;
    for (let c = 0; c < candidates.length; c++) active.push(c);
    for (let i = 0; i < count && active.length > 0; i++) {
      const set = holders.get(seqHashes[i]!);
      if (set === undefined) break;
      let w = 0;
      for (let a = 0; a < active.length; a++) {
        const c = active[a]!;
        if (set.has(candidates[c]!)) {
          out[c] = i + 1;
          active[w++] = c;
        }
      }
      active.length = w;
    }
    this.active = active;
  }

  /** Blocks from `from` on that `source` holds on host contiguously (the G2 continuation). */
  hostContinuation(source: number, seqHashes: ArrayLike<bigint>, from: number, count: number): number {
    const host = this.tiers.host;
    let j = from;
    while (j < count && host.holds(source, seqHashes[j]!)) j++;
    return j - from;
  }

  /** Blocks a source holds in a tier (the index footprint used to break ties). */
  footprint(source: number, tier: KvTier = "device"): number {
    return this.tiers[tier].bySource.get(source)?.size ?? 0;
  }

  /** Every hash a source holds in a tier (tests). */
  blocksOf(source: number, tier: KvTier): bigint[] {
    return [...(this.tiers[tier].bySource.get(source) ?? [])];
  }
}
