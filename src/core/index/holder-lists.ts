// Many small lists of rank ids (one per indexed block: the ranks holding it) in one Int32Array slab.
// A JS array per list made millions of heap objects at a full trace's index (2.3 M arrays with
// 1,000 workers): every garbage collection marked them all and every read went through two
// pointers. Here a list is a block of the slab whose capacity is a power of two; a full block
// moves to one twice its size and freed blocks are reused by size class. Readers index `slab` at
// meta[id × META + OFF] for meta[id × META + LEN] values; `slab` and `meta` are replaced when they
// grow, so read them again after a change. A list's fields share one 32-byte record in `meta`
// (offset, length, size class, the set fingerprint, the block's hash words, the next-block hint):
// an event or walk step that touches a list reads one cache line, not one per field.
import { grown } from "../kv/grown.ts";

/** int32 fields per list record in `meta`. */
export const META = 8;
/** Offset of the list's block in the slab. */
export const OFF = 0;
/** Number of ranks in the list (0 once closed). */
export const LEN = 1;
/** log2 of the block's capacity. */
const CLS = 2;
/** Sums (mod 2^32) of the members' two weights: the set fingerprint (tier-index.ts). */
export const FPA = 3;
export const FPB = 4;
/** The block's hash words (to close the list by id, and to check a hint). */
export const KW0 = 5;
export const KW1 = 6;
/**
 * A hint: the list id of a block seen after this one in a chain (a store's next block, or the
 * block a walk found next), or -1. Only a hint: the reader checks that list's hash words and
 * that it is open, and asks the hash map when it is not the block it wants.
 */
export const NEXT = 7;

export class HolderLists {
  slab = new Int32Array(1024);
  meta = new Int32Array(256 * META);
  private top = 0;
  private ids = 0;
  private readonly freeIds: number[] = [];
  /** Free blocks by size class: their offsets. */
  private readonly freeBlocks: number[][] = [];

  /** The id open() takes next. */
  nextId(): number {
    const free = this.freeIds;
    return free.length > 0 ? free[free.length - 1]! : this.ids;
  }

  /** A new empty list (of id nextId()) for the block (w0, w1). */
  open(w0: number, w1: number): number {
    let id = this.freeIds.pop();
    if (id === undefined) {
      id = this.ids++;
      if ((id + 1) * META > this.meta.length) this.meta = grown(this.meta, this.meta.length * 2);
    }
    const at = this.block(0);
    const m = this.meta;
    const r = id * META;
    m[r + OFF] = at;
    m[r + LEN] = 0;
    m[r + CLS] = 0;
    m[r + FPA] = 0;
    m[r + FPB] = 0;
    m[r + KW0] = w0;
    m[r + KW1] = w1;
    m[r + NEXT] = -1;
    return id;
  }

  /** Frees an empty list's id and block. */
  close(id: number): void {
    const r = id * META;
    this.freeBlock(this.meta[r + OFF]!, this.meta[r + CLS]!);
    this.freeIds.push(id);
  }

  /** Adds `value` to list `id`, and `a`, `b` to its fingerprint. */
  push(id: number, value: number, a: number, b: number): void {
    const r = id * META;
    let m = this.meta;
    const n = m[r + LEN]!;
    const c = m[r + CLS]!;
    if (n === 1 << c) {
      const from = m[r + OFF]!;
      const to = this.block(c + 1);
      this.slab.copyWithin(to, from, from + n);
      this.freeBlock(from, c);
      m = this.meta;
      m[r + OFF] = to;
      m[r + CLS] = c + 1;
    }
    this.slab[m[r + OFF]! + n] = value;
    m[r + LEN] = n + 1;
    m[r + FPA] = (m[r + FPA]! + a) | 0;
    m[r + FPB] = (m[r + FPB]! + b) | 0;
  }

  /**
   * Takes `value` out of the list (the last value moves into its place) and `a`, `b` out of its
   * fingerprint; false when absent.
   */
  remove(id: number, value: number, a: number, b: number): boolean {
    const m = this.meta;
    const r = id * META;
    const o = m[r + OFF]!;
    const last = o + m[r + LEN]! - 1;
    const slab = this.slab;
    // Newest first: a plain loop, as holder lists are short.
    let at = last;
    while (at >= o && slab[at] !== value) at--;
    if (at < o) return false;
    slab[at] = slab[last]!;
    m[r + LEN] = last - o;
    m[r + FPA] = (m[r + FPA]! - a) | 0;
    m[r + FPB] = (m[r + FPB]! - b) | 0;
    return true;
  }

  /** An offset of a free block of capacity 2^c. */
  private block(c: number): number {
    const free = this.freeBlocks[c];
    if (free !== undefined && free.length > 0) return free.pop()!;
    const at = this.top;
    const end = at + (1 << c);
    if (end > this.slab.length) this.slab = grown(this.slab, Math.max(end, this.slab.length * 2));
    this.top = end;
    return at;
  }

  private freeBlock(at: number, c: number): void {
    while (this.freeBlocks.length <= c) this.freeBlocks.push([]);
    this.freeBlocks[c]!.push(at);
  }
}
