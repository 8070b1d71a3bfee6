// seq hash → local hash of the blocks one (worker, rank) holds, per tier, for the direct-mode relay
// and the truth endpoint (GET /v1/residency).
// Router events carry {seq_hash, local_hash} for every block, removals included, but
// the engine's removed events carry only sequence hashes; stored events fill this, removals drain it.
import type { KvTier } from "../../core/kv/kv-events.ts";

export class LocalHashIndex {
  // Map<bigint, bigint> measured faster than an open-addressing table over BigUint64Array in Bun
  // (every typed-array read of a u64 allocates a bigint). Keys are the engine's own bigint objects.
  private readonly device = new Map<bigint, bigint>();
  private readonly host = new Map<bigint, bigint>();

  private tier(tier: KvTier): Map<bigint, bigint> {
    return tier === "device" ? this.device : this.host;
  }

  /** Records the blocks of a stored event (a block stored again just keeps its local hash). */
  stored(tier: KvTier, seqHashes: readonly bigint[], localHashes: readonly bigint[]): void {
    const map = this.tier(tier);
    for (let i = 0; i < seqHashes.length; i++) map.set(seqHashes[i]!, localHashes[i]!);
  }

  /** Forgets a removed block and returns its local hash; undefined if it was never stored here. */
  removed(tier: KvTier, seqHash: bigint): bigint | undefined {
    const map = this.tier(tier);
    const local = map.get(seqHash);
    if (local !== undefined) map.delete(seqHash);
    return local;
  }

  /** The local hash of a block held in `tier`, if it is held there. */
  get(tier: KvTier, seqHash: bigint): bigint | undefined {
    return this.tier(tier).get(seqHash);
  }

  cleared(tier: KvTier): void {
    this.tier(tier).clear();
  }

  size(tier: KvTier): number {
    return this.tier(tier).size;
  }
}
