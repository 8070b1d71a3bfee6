// G2 (host) tier of one rank: a fixed number of host blocks keyed by sequence hash, LRU
// eviction. An entry is pending while its device-to-host copy is in flight (it holds a cell but
// is not resident and cannot be evicted) and pinned while a host-to-device load reads it (a load
// may pin a pending entry: it waits for the copy to land).
// Storage grows with the cells used, not the capacity (as G1's does): a capacity of billions
// costs nothing until blocks land, and a process may run 1,024 ranks.
import { LruList } from "./lru-list.ts";
import { SPLIT, splitU64, U64Map } from "./u64-map.ts";
import { grown } from "./grown.ts";

const FREE = 0;
const PENDING = 1;
const RESIDENT = 2;
/** A pending entry whose store was dropped while a load pinned it: freed at the last unpin. */
const DROPPED = 3;

export class HostTier {
  readonly capacity: number;
  private readonly byHash = new U64Map();
  /** Per cell used so far (grown as `fresh` advances): hash (also as u32 words), state, pins. */
  private cellHash: BigUint64Array;
  private cellWords: Uint32Array;
  private state: Uint8Array;
  private pins: Int32Array;
  /** Pending entries: when their copy lands (ms). */
  private landsAtMs: Float64Array;
  /** Resident, unpinned entries; head = least recently used. */
  private readonly lru: LruList;
  /** Cells freed by dropped stores; [fresh, capacity) were never used. */
  private readonly freeCells: number[] = [];
  private fresh = 0;
  residentBlocks = 0;
  /** Entries a host-to-device load is reading (0 once every load landed or was abandoned). */
  pinnedBlocks = 0;

  constructor(capacity: number) {
    this.capacity = capacity;
    const initial = Math.min(capacity, 64);
    this.cellHash = new BigUint64Array(initial);
    this.cellWords = new Uint32Array(this.cellHash.buffer);
    this.state = new Uint8Array(initial);
    this.pins = new Int32Array(initial);
    this.landsAtMs = new Float64Array(initial);
    this.lru = new LruList(capacity);
  }

  /** Cells allocated so far (tests: storage follows use, not capacity). */
  get allocatedCells(): number {
    return this.state.length;
  }

  /** Cells holding a pending or resident entry. */
  get usedBlocks(): number {
    return this.fresh - this.freeCells.length;
  }

  /** True when `hash` is pending or resident (so no new copy is needed). */
  has(hash: bigint): boolean {
    return this.byHash.hasBig(hash);
  }

  /** Resident cell of the hash with words (w0, w1), or -1 (pending entries are not visible). */
  residentCell(w0: number, w1: number): number {
    const cell = this.byHash.get(w0, w1);
    return cell !== -1 && this.state[cell] === RESIDENT ? cell : -1;
  }

  /** Cell of the hash (w0, w1) if resident or pending (its copy in flight), or -1. */
  lookupCell(w0: number, w1: number): number {
    return this.byHash.get(w0, w1);
  }

  isResident(cell: number): boolean {
    return this.state[cell] === RESIDENT;
  }

  isPending(cell: number): boolean {
    return this.state[cell] === PENDING;
  }

  /** When the pending copy into `cell` lands. */
  pendingLandsAtMs(cell: number): number {
    return this.landsAtMs[cell]!;
  }

  setPendingLandsAt(cell: number, landsAtMs: number): void {
    this.landsAtMs[cell] = landsAtMs;
  }

  /** A lookup hit `cell`: a resident, unpinned entry becomes most recently used (vLLM's touch). */
  touch(cell: number): void {
    if (!this.lru.has(cell)) return;
    this.lru.remove(cell);
    this.lru.pushBack(cell);
  }

  /**
   * Reserves a cell for an incoming copy of `hash` (pending). Evicts the LRU resident entry
   * when full, pushing its hash onto `evicted`. Returns -1 when every cell is pending or pinned.
   */
  reserve(hash: bigint, evicted: bigint[]): number {
    let cell = this.freeCells.pop() ?? (this.fresh < this.capacity ? this.fresh++ : undefined);
    if (cell === undefined) {
      const victim = this.lru.popFront();
      if (victim === -1) return -1;
      this.byHash.delete(this.cellWords[2 * victim]!, this.cellWords[2 * victim + 1]!);
      this.residentBlocks--;
      evicted.push(this.cellHash[victim]!);
      cell = victim;
    } else if (cell >= this.state.length) this.grow();
    splitU64(hash);
    this.byHash.set(SPLIT[0]!, SPLIT[1]!, cell);
    this.cellHash[cell] = hash;
    this.state[cell] = PENDING;
    return cell;
  }

  /** The copy into `cell` landed: the entry becomes resident and most recently used. */
  land(cell: number): void {
    this.state[cell] = RESIDENT;
    this.residentBlocks++;
    if (this.pins[cell] === 0) this.lru.pushBack(cell);
  }

  /** Abandons a pending entry (its store event was dropped): no residency ever existed. */
  dropPending(cell: number): void {
    this.byHash.delete(this.cellWords[2 * cell]!, this.cellWords[2 * cell + 1]!);
    if (this.pins[cell]! > 0) {
      this.state[cell] = DROPPED; // a load waiting on it sees it is not resident at its last unpin
      return;
    }
    this.state[cell] = FREE;
    this.freeCells.push(cell);
  }

  hashOf(cell: number): bigint {
    return this.cellHash[cell]!;
  }

  /** A load starts reading `cell`: it cannot be evicted until unpinned. */
  pin(cell: number): void {
    if (this.pins[cell]!++ === 0) {
      if (this.lru.has(cell)) this.lru.remove(cell);
      this.pinnedBlocks++;
    }
  }

  /** A load finished (or was abandoned); the entry becomes most recently used again. */
  unpin(cell: number): void {
    if (--this.pins[cell]! === 0) {
      this.pinnedBlocks--;
      if (this.state[cell] === RESIDENT) this.lru.pushBack(cell);
      else if (this.state[cell] === DROPPED) {
        this.state[cell] = FREE;
        this.freeCells.push(cell);
      }
    }
  }

  residentHashes(): bigint[] {
    const out: bigint[] = [];
    this.byHash.forEach((hash, cell) => {
      if (this.state[cell] === RESIDENT) out.push(hash);
    });
    return out;
  }

  /** Resident hashes from least to most recently used, pinned ones excluded (tests). */
  lruOrder(): bigint[] {
    return this.lru.toArray().map((s) => this.cellHash[s]!);
  }

  private grow(): void {
    const len = Math.min(this.capacity, this.state.length * 2);
    this.cellHash = grown(this.cellHash, len);
    this.cellWords = new Uint32Array(this.cellHash.buffer);
    this.state = grown(this.state, len);
    this.pins = grown(this.pins, len);
    this.landsAtMs = grown(this.landsAtMs, len);
  }
}
