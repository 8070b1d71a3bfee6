// Token-id recovery for host stores (SPEC §2). A G2 `stored` must carry token ids but the G2
// copy has none, and the G1 `removed` of a block can precede its G2 `stored` (the slot was
// reused while the copy was in flight). So each block's record (parent, local hash, token ids)
// is kept while it is resident in any tier, plus a bounded FIFO of recently released blocks.
// A store is resolved whole before any tier bit changes; if one block is unknown the whole
// store is refused and nothing changes.
import type { KvTier } from "./kv-events.ts";
import { grown } from "./grown.ts";

export const RELEASED_FIFO_BLOCKS = 16_384;

const TIER_BIT: Record<KvTier, number> = { device: 1, host: 2 };

export interface BlockRecord {
  readonly parentHash: bigint | null;
  readonly localHash: bigint;
  /** Exactly blockSize token ids (an owned copy). */
  readonly tokenIds: Uint32Array;
  /** Bit set of the tiers the block is resident in. */
  tiers: number;
  /** FIFO ticket of the block's latest release (0 = never released). */
  releasedAt: number;
}

export class BlockTokenRegistry {
  private readonly records = new Map<bigint, BlockRecord>();
  /** Ring of released hashes and their tickets; grown up to releasedCapacity as releases come. */
  private fifo: BigUint64Array;
  private fifoTicket: Float64Array;
  private fifoNext = 0;
  private ticket = 0;

  constructor(readonly releasedCapacity: number = RELEASED_FIFO_BLOCKS) {
    // 256 kB per rank at 16,384 if allocated up front; 1,024 ranks run in one mocker process.
    const initial = Math.min(Math.max(1, releasedCapacity), 64);
    this.fifo = new BigUint64Array(initial);
    this.fifoTicket = new Float64Array(initial);
  }

  /** FIFO entries allocated so far (tests: storage follows releases, not capacity). */
  get fifoAllocated(): number {
    return this.fifo.length;
  }

  /** Records known (resident somewhere, or released and still in the FIFO). */
  get size(): number {
    return this.records.size;
  }

  /** A block became resident in `tier` with its own token ids (copied when first seen). */
  stored(tier: KvTier, hash: bigint, parentHash: bigint | null, localHash: bigint, tokenIds: Uint32Array): void {
    let rec = this.records.get(hash);
    if (rec === undefined) {
      rec = { parentHash, localHash, tokenIds: tokenIds.slice(), tiers: 0, releasedAt: 0 };
      this.records.set(hash, rec);
    }
    rec.tiers |= TIER_BIT[tier];
  }

  /** A block left `tier`; when it is resident nowhere it enters the released FIFO. */
  removed(tier: KvTier, hash: bigint): void {
    const rec = this.records.get(hash);
    if (rec === undefined) return;
    rec.tiers &= ~TIER_BIT[tier];
    if (rec.tiers !== 0) return;
    if (this.releasedCapacity <= 0) {
      this.records.delete(hash);
      return;
    }
    const at = this.fifoNext % this.releasedCapacity;
    if (this.fifoNext >= this.releasedCapacity) this.expire(this.fifo[at]!, this.fifoTicket[at]!);
    else if (at >= this.fifo.length) this.growFifo();
    const ticket = ++this.ticket;
    this.fifo[at] = hash;
    this.fifoTicket[at] = ticket;
    rec.releasedAt = ticket;
    this.fifoNext++;
  }

  /** Records of all `hashes`, or undefined (and nothing touched) if any one is unknown. */
  resolve(hashes: readonly bigint[]): BlockRecord[] | undefined {
    const out: BlockRecord[] = [];
    for (const h of hashes) {
      const rec = this.records.get(h);
      if (rec === undefined) return undefined;
      out.push(rec);
    }
    return out;
  }

  /** Resolves, then marks every block resident in `tier`; undefined = refused, nothing changed. */
  storeResolved(tier: KvTier, hashes: readonly bigint[]): BlockRecord[] | undefined {
    const recs = this.resolve(hashes);
    if (recs === undefined) return undefined;
    for (const rec of recs) rec.tiers |= TIER_BIT[tier];
    return recs;
  }

  /** Tier bits of a block (0 = not resident, or unknown). */
  tiersOf(hash: bigint): number {
    return this.records.get(hash)?.tiers ?? 0;
  }

  has(hash: bigint): boolean {
    return this.records.has(hash);
  }

  clear(): void {
    this.records.clear();
    this.fifoNext = 0;
  }

  private growFifo(): void {
    const len = Math.min(this.releasedCapacity, this.fifo.length * 2);
    this.fifo = grown(this.fifo, len);
    this.fifoTicket = grown(this.fifoTicket, len);
  }

  private expire(hash: bigint, ticket: number): void {
    const rec = this.records.get(hash);
    // Only the latest release of a block that is still resident nowhere expires it.
    if (rec !== undefined && rec.tiers === 0 && rec.releasedAt === ticket) this.records.delete(hash);
  }
}
