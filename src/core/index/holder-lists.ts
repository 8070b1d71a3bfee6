// Many small lists of rank ids (one per indexed block: the ranks holding it) in one Int32Array slab.
// A JS array per list made millions of heap objects at a full trace's index (2.3 M arrays with
// 1,000 workers): every garbage collection marked them all and every read went through two
// pointers. Here a list is a block of the slab whose capacity is a power of two; a full block
// moves to one twice its size and freed blocks are reused by size class. Readers index `slab` at
// off[id] for len[id] values; `slab` is replaced when it grows, so read it again after a change.
import { grown } from "../kv/grown.ts";

export class HolderLists {
  slab = new Int32Array(1024);
  off = new Int32Array(256);
  len = new Int32Array(256);
  /** Per list, log2 of its block's capacity. */
  private cls = new Uint8Array(256);
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

  /** A new empty list (of id nextId()). */
  open(): number {
    let id = this.freeIds.pop();
    if (id === undefined) {
      id = this.ids++;
      if (id >= this.off.length) {
        const size = this.off.length * 2;
        this.off = grown(this.off, size);
        this.len = grown(this.len, size);
        this.cls = grown(this.cls, size);
      }
    }
    this.off[id] = this.block(0);
    this.cls[id] = 0;
    this.len[id] = 0;
    return id;
  }

  /** Frees an empty list's id and block. */
  close(id: number): void {
    this.freeBlock(this.off[id]!, this.cls[id]!);
    this.freeIds.push(id);
  }

  push(id: number, value: number): void {
    const n = this.len[id]!;
    const c = this.cls[id]!;
    if (n === 1 << c) {
      const from = this.off[id]!;
      const to = this.block(c + 1);
      this.slab.copyWithin(to, from, from + n);
      this.freeBlock(from, c);
      this.off[id] = to;
      this.cls[id] = c + 1;
    }
    this.slab[this.off[id]! + n] = value;
    this.len[id] = n + 1;
  }

  /** Takes `value` out of the list (the last value moves into its place); false when absent. */
  remove(id: number, value: number): boolean {
    const o = this.off[id]!;
    const last = o + this.len[id]! - 1;
    const slab = this.slab;
    // Newest first: a plain loop, as holder lists are short.
    let at = last;
    while (at >= o && slab[at] !== value) at--;
    if (at < o) return false;
    slab[at] = slab[last]!;
    this.len[id]!--;
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
