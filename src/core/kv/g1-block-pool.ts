// G1 (device) block pool of one rank, after vLLM v1's BlockPool: physical cells with refcounts,
// a prefix cache keyed by sequence hash, and an LRU free pool in which blocks with refcount 0
// stay cached until their cell is taken. Also holds each cell's d2h fence (a cell
// whose device-to-host copy is in flight cannot be overwritten before the copy lands).
// Memory grows with use, not capacity: never-used cells are a counter, not list nodes, since
// a process may hold thousands of ranks of 16,384 blocks each. Hashes go in as their two u32
// words (u64-map.ts): the prefix cache is the hottest map of a replay.
import { LruList } from "./lru-list.ts";
import { U64Map } from "./u64-map.ts";
import { grown } from "./grown.ts";

export class G1BlockPool {
  readonly capacity: number;
  /** Per cell in use so far (the arrays grow with the highest cell used). */
  refcount: Int32Array;
  /** Time (ms) until which a cell is being read by a d2h copy; empty without a host tier. */
  fenceUntilMs: Float64Array;
  /** Sequence hash cached by each cell, and the same storage as u32 word pairs. */
  private cellHash: BigUint64Array;
  private cellWords: Uint32Array;
  private hashed: Uint8Array;
  private readonly withFences: boolean;
  /** Used blocks with refcount 0: uncached ones first, then cached ones least recently freed first. */
  private readonly free: LruList;
  /** Cells [fresh, capacity) were never used (uncached, free). */
  private fresh = 0;
  private readonly cached = new U64Map();
  /** Blocks with refcount > 0. */
  activeBlocks = 0;

  constructor(capacity: number, withFences: boolean) {
    this.capacity = capacity;
    this.withFences = withFences;
    const initial = Math.min(capacity, 64);
    this.refcount = new Int32Array(initial);
    this.fenceUntilMs = new Float64Array(withFences ? initial : 0);
    this.cellHash = new BigUint64Array(initial);
    this.cellWords = new Uint32Array(this.cellHash.buffer);
    this.hashed = new Uint8Array(initial);
    this.free = new LruList(capacity);
  }

  get freeBlocks(): number {
    return this.free.size + this.capacity - this.fresh;
  }

  get cachedBlocks(): number {
    return this.cached.size;
  }

  /** Cell caching the hash with words (w0, w1), or -1. */
  lookup(w0: number, w1: number): number {
    return this.cached.get(w0, w1);
  }

  /** Takes one more reference on a cached cell (a prefix hit). */
  acquire(cell: number): void {
    if (this.refcount[cell]! === 0) {
      this.free.remove(cell);
      this.activeBlocks++;
    }
    this.refcount[cell]!++;
  }

  /**
   * Takes the least recently freed cell (refcount 1). If it still caches a block, that block
   * is evicted and its hash pushed onto `evicted`. Returns -1 when no cell is free.
   */
  allocate(evicted: bigint[]): number {
    let cell = this.free.popFront();
    if (cell === -1 || this.hashed[cell] === 1) {
      // No uncached block in the pool: a never-used cell goes before evicting a cached block.
      if (this.fresh < this.capacity) {
        if (cell !== -1) this.free.pushFront(cell);
        cell = this.fresh++;
        if (cell >= this.refcount.length) this.grow();
      } else if (cell === -1) return -1;
    }
    if (this.hashed[cell] === 1) {
      this.cached.delete(this.cellWords[2 * cell]!, this.cellWords[2 * cell + 1]!);
      this.hashed[cell] = 0;
      evicted.push(this.cellHash[cell]!);
    }
    this.refcount[cell] = 1;
    this.activeBlocks++;
    return cell;
  }

  /**
   * Drops one reference. At 0 a cached block joins the MRU end (evicted last); an uncached one
   * the LRU end, since reusing it first loses nothing. Callers release a sequence tail first.
   */
  release(cell: number): void {
    const rc = --this.refcount[cell]!;
    if (rc > 0) return;
    if (rc < 0) throw new RangeError(`G1 cell ${cell} released more often than acquired`);
    this.activeBlocks--;
    if (this.hashed[cell] === 1) this.free.pushBack(cell);
    else this.free.pushFront(cell);
  }

  /** Makes `cell` the cached block of hash (w0, w1); false when another cell already caches it. */
  register(cell: number, w0: number, w1: number): boolean {
    if (!this.cached.setIfAbsent(w0, w1, cell)) return false;
    this.cellWords[2 * cell] = w0;
    this.cellWords[2 * cell + 1] = w1;
    this.hashed[cell] = 1;
    return true;
  }

  /** Forgets every cached hash (prefix-cache reset); only valid with no block in use. */
  clear(): void {
    this.cached.clear();
    this.hashed.fill(0);
  }

  /** Every cached hash (inspection and tests). */
  residentHashes(): bigint[] {
    return this.cached.keyList();
  }

  /** Free cells from first to last taken (tests). */
  freeOrder(): number[] {
    const used = this.free.toArray();
    const firstCached = used.findIndex((s) => this.hashed[s] === 1);
    const fresh = Array.from({ length: this.capacity - this.fresh }, (_, i) => this.fresh + i);
    return firstCached === -1 ? [...used, ...fresh] : [...used.slice(0, firstCached), ...fresh, ...used.slice(firstCached)];
  }

  private grow(): void {
    const len = Math.min(this.capacity, this.refcount.length * 2);
    this.refcount = grown(this.refcount, len);
    this.cellHash = grown(this.cellHash, len);
    this.cellWords = new Uint32Array(this.cellHash.buffer);
    this.hashed = grown(this.hashed, len);
    if (this.withFences) this.fenceUntilMs = grown(this.fenceUntilMs, len);
  }
}
