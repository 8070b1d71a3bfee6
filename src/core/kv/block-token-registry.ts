// Token-id recovery for host stores. A G2 `stored` must carry token ids but the G2
// copy has none, and the G1 `removed` of a block can precede its G2 `stored` (the slot was
// reused while the copy was in flight). So each block's record (parent, local hash, token ids)
// is kept while it is resident in any tier, plus a bounded FIFO of recently released blocks.
// A store is resolved whole before any tier bit changes; if one block is unknown the whole
// store is refused and nothing changes.
// Memory (a tiny G2 once cost 5× the memory of none, bench/replay-memory.ts): records live in
// parallel typed arrays and one token slab, indexed by a record slot found through a U64Map, so a
// record costs its token ids (4 × block size bytes) plus ~40 bytes, not a JS object, a Map entry,
// three bigints and a Uint32Array per block.
import type { KvTier } from "./kv-events.ts";
import { grown } from "./grown.ts";
import { SPLIT, splitU64, U64Map } from "./u64-map.ts";

export const RELEASED_FIFO_BLOCKS = 16_384;

const TIER_BIT: Record<KvTier, number> = { device: 1, host: 2 };
const INITIAL_SLOTS = 64;

/** One block's recovered record: a view, valid until the registry next changes. */
export interface BlockRecord {
  readonly parentHash: bigint | null;
  readonly localHash: bigint;
  /** Exactly blockSize token ids (a view into the registry's slab: copy to keep). */
  readonly tokenIds: Uint32Array;
  /** The LoRA adapter the block was computed under; absent for the base model. */
  readonly loraName?: string;
}

export class BlockTokenRegistry {
  private readonly bySlot = new U64Map();
  // Per record slot (grown with the slots used): hash, parent (+ has-parent flag), local hash,
  // tier bits, FIFO ticket of the latest release (0 = never released), token ids.
  private hash = new BigUint64Array(INITIAL_SLOTS);
  private parent = new BigUint64Array(INITIAL_SLOTS);
  private hasParent = new Uint8Array(INITIAL_SLOTS);
  private local = new BigUint64Array(INITIAL_SLOTS);
  private tiers = new Uint8Array(INITIAL_SLOTS);
  private releasedAt = new Float64Array(INITIAL_SLOTS);
  private tokens = new Uint32Array(0);
  /** The LoRA adapter of record slots computed under one (sparse: the base model's blocks have none). */
  private readonly adapters = new Map<number, string>();
  /** Tokens per block: learned from the first store (one engine, one block size). */
  private blockSize = 0;
  private readonly freeSlots: number[] = [];
  private fresh = 0;
  /** Ring of released record slots and their tickets; grown up to releasedCapacity as releases come. */
  private fifoSlot: Int32Array;
  private fifoTicket: Float64Array;
  private fifoNext = 0;
  private ticket = 0;

  constructor(readonly releasedCapacity: number = RELEASED_FIFO_BLOCKS) {
    // 192 kB per rank at 16,384 if allocated up front; 1,024 ranks run in one mocker process.
    const initial = Math.min(Math.max(1, releasedCapacity), 64);
    this.fifoSlot = new Int32Array(initial);
    this.fifoTicket = new Float64Array(initial);
  }

  /** FIFO entries allocated so far (tests: storage follows releases, not capacity). */
  get fifoAllocated(): number {
    return this.fifoSlot.length;
  }

  /** Records known (resident somewhere, or released and still in the FIFO). */
  get size(): number {
    return this.bySlot.size;
  }

  /** Bytes held by the record arrays and the token slab (tests and benches). */
  get storageBytes(): number {
    return this.hash.byteLength * 3 + this.hasParent.byteLength + this.tiers.byteLength + this.releasedAt.byteLength + this.tokens.byteLength + this.fifoSlot.byteLength + this.fifoTicket.byteLength;
  }

  /** A block became resident in `tier` with its own token ids (copied when first seen). */
  stored(tier: KvTier, hash: bigint, parentHash: bigint | null, localHash: bigint, tokenIds: Uint32Array): void {
    this.storedAt(tier, hash, parentHash, localHash, tokenIds, 0, tokenIds.length);
  }

  /** `stored` for the block whose token ids are tokens[from, from + blockSize): no view allocated. */
  storedAt(tier: KvTier, hash: bigint, parentHash: bigint | null, localHash: bigint, tokens: Uint32Array, from: number, blockSize: number, loraName?: string): void {
    splitU64(hash);
    let slot = this.bySlot.get(SPLIT[0]!, SPLIT[1]!);
    if (slot === -1) {
      const w0 = SPLIT[0]!;
      const w1 = SPLIT[1]!;
      slot = this.allocate(blockSize);
      this.bySlot.set(w0, w1, slot);
      this.hash[slot] = hash;
      this.hasParent[slot] = parentHash === null ? 0 : 1;
      this.parent[slot] = parentHash ?? 0n;
      this.local[slot] = localHash;
      this.tiers[slot] = 0;
      this.releasedAt[slot] = 0;
      const slab = this.tokens;
      const at = slot * blockSize;
      for (let i = 0; i < blockSize; i++) slab[at + i] = tokens[from + i]!;
      if (loraName !== undefined) this.adapters.set(slot, loraName);
    }
    this.tiers[slot]! |= TIER_BIT[tier];
  }

  /** A block left `tier`; when it is resident nowhere it enters the released FIFO. */
  removed(tier: KvTier, hash: bigint): void {
    const slot = this.bySlot.getBig(hash);
    if (slot === -1) return;
    this.tiers[slot]! &= ~TIER_BIT[tier];
    if (this.tiers[slot] !== 0) return;
    if (this.releasedCapacity <= 0) {
      this.free(slot);
      return;
    }
    const at = this.fifoNext % this.releasedCapacity;
    if (this.fifoNext >= this.releasedCapacity) this.expire(this.fifoSlot[at]!, this.fifoTicket[at]!);
    else if (at >= this.fifoSlot.length) this.growFifo();
    const ticket = ++this.ticket;
    this.fifoSlot[at] = slot;
    this.fifoTicket[at] = ticket;
    this.releasedAt[slot] = ticket;
    this.fifoNext++;
  }

  /** Records of all `hashes`, or undefined (and nothing touched) if any one is unknown. */
  resolve(hashes: readonly bigint[]): BlockRecord[] | undefined {
    const slots = this.slotsOf(hashes);
    return slots === undefined ? undefined : slots.map((s) => this.record(s));
  }

  /** Resolves, then marks every block resident in `tier`; undefined = refused, nothing changed. */
  storeResolved(tier: KvTier, hashes: readonly bigint[]): BlockRecord[] | undefined {
    const slots = this.slotsOf(hashes);
    if (slots === undefined) return undefined;
    for (const s of slots) this.tiers[s]! |= TIER_BIT[tier];
    return slots.map((s) => this.record(s));
  }

  /**
   * The hot-path form of storeResolved: record slots of all `hashes` marked resident in `tier`,
   * or undefined (nothing changed). Read them with parentOf / localOf / copyTokens at once.
   */
  storeResolvedSlots(tier: KvTier, hashes: readonly bigint[]): number[] | undefined {
    const slots = this.slotsOf(hashes);
    if (slots === undefined) return undefined;
    for (const s of slots) this.tiers[s]! |= TIER_BIT[tier];
    return slots;
  }

  parentOf(slot: number): bigint | null {
    return this.hasParent[slot] === 1 ? this.parent[slot]! : null;
  }

  localOf(slot: number): bigint {
    return this.local[slot]!;
  }

  /** The LoRA adapter of record `slot`; undefined for the base model. */
  adapterOf(slot: number): string | undefined {
    return this.adapters.size === 0 ? undefined : this.adapters.get(slot);
  }

  /** Copies the token ids of record `slot` into dst[at, at + blockSize). */
  copyTokens(slot: number, dst: Uint32Array, at: number): void {
    const bs = this.blockSize;
    const slab = this.tokens;
    const from = slot * bs;
    for (let i = 0; i < bs; i++) dst[at + i] = slab[from + i]!; // no view allocated per block
  }

  /** Tier bits of a block (0 = not resident, or unknown). */
  tiersOf(hash: bigint): number {
    const slot = this.bySlot.getBig(hash);
    return slot === -1 ? 0 : this.tiers[slot]!;
  }

  has(hash: bigint): boolean {
    return this.bySlot.hasBig(hash);
  }

  private slotsOf(hashes: readonly bigint[]): number[] | undefined {
    const out: number[] = [];
    for (const h of hashes) {
      const slot = this.bySlot.getBig(h);
      if (slot === -1) return undefined;
      out.push(slot);
    }
    return out;
  }

  private record(slot: number): BlockRecord {
    const bs = this.blockSize;
    const loraName = this.adapterOf(slot);
    return {
      parentHash: this.hasParent[slot] === 1 ? this.parent[slot]! : null,
      localHash: this.local[slot]!,
      tokenIds: this.tokens.subarray(slot * bs, (slot + 1) * bs),
      ...(loraName !== undefined ? { loraName } : {}),
    };
  }

  private allocate(blockSize: number): number {
    if (this.blockSize === 0) this.blockSize = blockSize;
    else if (blockSize !== this.blockSize) throw new RangeError(`block of ${blockSize} token ids in a registry of block size ${this.blockSize}`);
    const slot = this.freeSlots.pop() ?? this.fresh++;
    if (slot >= this.hash.length) this.grow(Math.max(INITIAL_SLOTS, this.hash.length * 2));
    if ((slot + 1) * this.blockSize > this.tokens.length) this.tokens = grown(this.tokens, this.hash.length * this.blockSize);
    return slot;
  }

  private free(slot: number): void {
    splitU64(this.hash[slot]!);
    this.bySlot.delete(SPLIT[0]!, SPLIT[1]!);
    this.releasedAt[slot] = 0;
    if (this.adapters.size > 0) this.adapters.delete(slot);
    this.freeSlots.push(slot);
  }

  private grow(len: number): void {
    this.hash = grown(this.hash, len);
    this.parent = grown(this.parent, len);
    this.hasParent = grown(this.hasParent, len);
    this.local = grown(this.local, len);
    this.tiers = grown(this.tiers, len);
    this.releasedAt = grown(this.releasedAt, len);
  }

  private growFifo(): void {
    const len = Math.min(this.releasedCapacity, this.fifoSlot.length * 2);
    this.fifoSlot = grown(this.fifoSlot, len);
    this.fifoTicket = grown(this.fifoTicket, len);
  }

  private expire(slot: number, ticket: number): void {
    // Only the latest release of a block that is still resident nowhere expires it (a slot freed
    // and reused since carries another ticket).
    if (this.tiers[slot] === 0 && this.releasedAt[slot] === ticket) this.free(slot);
  }
}
