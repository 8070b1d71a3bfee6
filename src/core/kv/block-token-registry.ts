// Token-id recovery for host stores. A G2 `stored` must carry token ids but the G2
// copy has none, and the G1 `removed` of a block can precede its G2 `stored` (the cell was
// reused while the copy was in flight). So each block's record (parent, local hash, token ids)
// is kept while it is resident in any tier, plus a bounded FIFO of recently released blocks.
// A store is resolved whole before any tier bit changes; if one block is unknown the whole
// store is refused and nothing changes.
// Memory (a tiny G2 once cost 5× the memory of none, bench/replay-memory.ts): records live in
// parallel typed arrays and one token slab, indexed by a record cell found through a U64Map, so a
// record costs its token ids (4 × block size bytes) plus ~40 bytes, not a JS object, a Map entry,
// three bigints and a Uint32Array per block.
import type { KvTier } from "./kv-events.ts";
import { grown } from "./grown.ts";
import { SPLIT, splitU64, U64Map } from "./u64-map.ts";

export const RELEASED_FIFO_BLOCKS = 16_384;

const TIER_BIT: Record<KvTier, number> = { device: 1, host: 2 };
const INITIAL_CELLS = 64;

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
  private readonly byCell = new U64Map();
  // Per record cell (grown with the cells used): hash, parent (+ has-parent flag), local hash,
  // tier bits, FIFO ticket of the latest release (0 = never released), token ids.
  private hash = new BigUint64Array(INITIAL_CELLS);
  private parent = new BigUint64Array(INITIAL_CELLS);
  private hasParent = new Uint8Array(INITIAL_CELLS);
  private local = new BigUint64Array(INITIAL_CELLS);
  private tiers = new Uint8Array(INITIAL_CELLS);
  private releasedAt = new Float64Array(INITIAL_CELLS);
  private tokens = new Uint32Array(0);
  /** The LoRA adapter of record cells computed under one (sparse: the base model's blocks have none). */
  private readonly adapters = new Map<number, string>();
  /** Tokens per block: learned from the first store (one engine, one block size). */
  private blockSize = 0;
  private readonly freeCells: number[] = [];
  private fresh = 0;
  /** Ring of released record cells and their tickets; grown up to releasedCapacity as releases come. */
  private fifoCell: Int32Array;
  private fifoTicket: Float64Array;
  private fifoNext = 0;
  private ticket = 0;

  constructor(readonly releasedCapacity: number = RELEASED_FIFO_BLOCKS) {
    // 192 kB per rank at 16,384 if allocated up front; 1,024 ranks run in one mocker process.
    const initial = Math.min(Math.max(1, releasedCapacity), 64);
    this.fifoCell = new Int32Array(initial);
    this.fifoTicket = new Float64Array(initial);
  }

  /** FIFO entries allocated so far (tests: storage follows releases, not capacity). */
  get fifoAllocated(): number {
    return this.fifoCell.length;
  }

  /** Records known (resident somewhere, or released and still in the FIFO). */
  get size(): number {
    return this.byCell.size;
  }

  /** Bytes held by the record arrays and the token slab (tests and benches). */
  get storageBytes(): number {
    return this.hash.byteLength * 3 + this.hasParent.byteLength + this.tiers.byteLength + this.releasedAt.byteLength + this.tokens.byteLength + this.fifoCell.byteLength + this.fifoTicket.byteLength;
  }

  /** A block became resident in `tier` with its own token ids (copied when first seen). */
  stored(tier: KvTier, hash: bigint, parentHash: bigint | null, localHash: bigint, tokenIds: Uint32Array): void {
    this.storedAt(tier, hash, parentHash, localHash, tokenIds, 0, tokenIds.length);
  }

  /** `stored` for the block whose token ids are tokens[from, from + blockSize): no view allocated. */
  storedAt(tier: KvTier, hash: bigint, parentHash: bigint | null, localHash: bigint, tokens: Uint32Array, from: number, blockSize: number, loraName?: string): void {
    splitU64(hash);
    let cell = this.byCell.get(SPLIT[0]!, SPLIT[1]!);
    if (cell === -1) {
      const w0 = SPLIT[0]!;
      const w1 = SPLIT[1]!;
      cell = this.allocate(blockSize);
      this.byCell.set(w0, w1, cell);
      this.hash[cell] = hash;
      this.hasParent[cell] = parentHash === null ? 0 : 1;
      this.parent[cell] = parentHash ?? 0n;
      this.local[cell] = localHash;
      this.tiers[cell] = 0;
      this.releasedAt[cell] = 0;
      const slab = this.tokens;
      const at = cell * blockSize;
      for (let i = 0; i < blockSize; i++) slab[at + i] = tokens[from + i]!;
      if (loraName !== undefined) this.adapters.set(cell, loraName);
    }
    this.tiers[cell]! |= TIER_BIT[tier];
  }

  /** A block left `tier`; when it is resident nowhere it enters the released FIFO. */
  removed(tier: KvTier, hash: bigint): void {
    const cell = this.byCell.getBig(hash);
    if (cell === -1) return;
    this.tiers[cell]! &= ~TIER_BIT[tier];
    if (this.tiers[cell] !== 0) return;
    if (this.releasedCapacity <= 0) {
      this.free(cell);
      return;
    }
    const at = this.fifoNext % this.releasedCapacity;
    if (this.fifoNext >= this.releasedCapacity) this.expire(this.fifoCell[at]!, this.fifoTicket[at]!);
    else if (at >= this.fifoCell.length) this.growFifo();
    const ticket = ++this.ticket;
    this.fifoCell[at] = cell;
    this.fifoTicket[at] = ticket;
    this.releasedAt[cell] = ticket;
    this.fifoNext++;
  }

  /** Records of all `hashes`, or undefined (and nothing touched) if any one is unknown. */
  resolve(hashes: readonly bigint[]): BlockRecord[] | undefined {
    const cells = this.cellsOf(hashes);
    return cells === undefined ? undefined : cells.map((s) => this.record(s));
  }

  /** Resolves, then marks every block resident in `tier`; undefined = refused, nothing changed. */
  storeResolved(tier: KvTier, hashes: readonly bigint[]): BlockRecord[] | undefined {
    const cells = this.cellsOf(hashes);
    if (cells === undefined) return undefined;
    for (const s of cells) this.tiers[s]! |= TIER_BIT[tier];
    return cells.map((s) => this.record(s));
  }

  /**
   * The hot-path form of storeResolved: record cells of all `hashes` marked resident in `tier`,
   * or undefined (nothing changed). Read them with parentOf / localOf / copyTokens at once.
   */
  storeResolvedCells(tier: KvTier, hashes: readonly bigint[]): number[] | undefined {
    const cells = this.cellsOf(hashes);
    if (cells === undefined) return undefined;
    for (const s of cells) this.tiers[s]! |= TIER_BIT[tier];
    return cells;
  }

  parentOf(cell: number): bigint | null {
    return this.hasParent[cell] === 1 ? this.parent[cell]! : null;
  }

  localOf(cell: number): bigint {
    return this.local[cell]!;
  }

  /** The LoRA adapter of record `cell`; undefined for the base model. */
  adapterOf(cell: number): string | undefined {
    return this.adapters.size === 0 ? undefined : this.adapters.get(cell);
  }

  /** Copies the token ids of record `cell` into dst[at, at + blockSize). */
  copyTokens(cell: number, dst: Uint32Array, at: number): void {
    const bs = this.blockSize;
    const slab = this.tokens;
    const from = cell * bs;
    for (let i = 0; i < bs; i++) dst[at + i] = slab[from + i]!; // no view allocated per block
  }

  /** Tier bits of a block (0 = not resident, or unknown). */
  tiersOf(hash: bigint): number {
    const cell = this.byCell.getBig(hash);
    return cell === -1 ? 0 : this.tiers[cell]!;
  }

  has(hash: bigint): boolean {
    return this.byCell.hasBig(hash);
  }

  private cellsOf(hashes: readonly bigint[]): number[] | undefined {
    const out: number[] = [];
    for (const h of hashes) {
      const cell = this.byCell.getBig(h);
      if (cell === -1) return undefined;
      out.push(cell);
    }
    return out;
  }

  private record(cell: number): BlockRecord {
    const bs = this.blockSize;
    const loraName = this.adapterOf(cell);
    return {
      parentHash: this.hasParent[cell] === 1 ? this.parent[cell]! : null,
      localHash: this.local[cell]!,
      tokenIds: this.tokens.subarray(cell * bs, (cell + 1) * bs),
      ...(loraName !== undefined ? { loraName } : {}),
    };
  }

  private allocate(blockSize: number): number {
    if (this.blockSize === 0) this.blockSize = blockSize;
    else if (blockSize !== this.blockSize) throw new RangeError(`block of ${blockSize} token ids in a registry of block size ${this.blockSize}`);
    const cell = this.freeCells.pop() ?? this.fresh++;
    if (cell >= this.hash.length) this.grow(Math.max(INITIAL_CELLS, this.hash.length * 2));
    if ((cell + 1) * this.blockSize > this.tokens.length) this.tokens = grown(this.tokens, this.hash.length * this.blockSize);
    return cell;
  }

  private free(cell: number): void {
    splitU64(this.hash[cell]!);
    this.byCell.delete(SPLIT[0]!, SPLIT[1]!);
    this.releasedAt[cell] = 0;
    if (this.adapters.size > 0) this.adapters.delete(cell);
    this.freeCells.push(cell);
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
    const len = Math.min(this.releasedCapacity, this.fifoCell.length * 2);
    this.fifoCell = grown(this.fifoCell, len);
    this.fifoTicket = grown(this.fifoTicket, len);
  }

  private expire(cell: number, ticket: number): void {
    // Only the latest release of a block that is still resident nowhere expires it (a cell freed
    // and reused since carries another ticket).
    if (this.tiers[cell] === 0 && this.releasedAt[cell] === ticket) this.free(cell);
  }
}
