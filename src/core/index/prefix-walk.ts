// The walk of a prompt's blocks through a block index's holder lists: per rank, the longest device
// prefix it holds, then its contiguous host and disk continuations. One walk serves every
// candidate (cost grows with the holders of the prompt's blocks, not with the candidate count);
// its answer is a Walk value, read until end() clears the per-rank scratch it wrote.
import { SPLIT, splitU64 } from "../kv/u64-map.ts";
import { FPA, FPB, KW0, KW1, LEN, META, NEXT, OFF } from "./holder-lists.ts";
import { type RankSet, type TierIndex, weightA, weightB } from "./tier-index.ts";

/**
 * The list id of block (w0, w1), which follows the block of list `prev` in the walked chain, or -1
 * when no rank holds it: prev's next-block hint when it is that block's open list (no hashing;
 * chains stored together sit in neighbouring records), else the hash map, whose answer becomes
 * the hint for the next walk.
 */
function nextList(tier: TierIndex, meta: Int32Array, prev: number, w0: number, w1: number): number {
  const hint = meta[prev * META + NEXT]!;
  if (hint >= 0) {
    const r = hint * META;
    if (meta[r + KW0] === w0 && meta[r + KW1] === w1 && meta[r + LEN]! > 0) return hint;
  }
  const id = tier.holders.get(w0, w1);
  if (id !== -1) meta[prev * META + NEXT] = id;
  return id;
}

/** Per-rank overlaps of one walk: index by rank id, 0 past the end. */
export interface OverlapsByRank {
  device: Int32Array;
  host: Int32Array;
  disk: Int32Array;
  /**
   * Every rank of the walk's cover holds at least this device prefix: its depth is
   * max(device[s], floor). 0 without a cover, or when block 0's holders are not exactly the cover.
   */
  floor: number;
}

/**
 * One walk's answer. The per-rank overlaps hold until the walker's end(); the rest (which hashes,
 * how deep, the blocks' list ids) is what a chain attached from this walk needs afterwards.
 */
export interface Walk extends OverlapsByRank {
  /** The walked hashes: blocks [0, count) of them. */
  hashes: ArrayLike<bigint>;
  count: number;
  /** The longest device prefix any rank holds. */
  deepest: number;
  /** The list ids of blocks [0, deepest) in the device tier. */
  pathIds: Int32Array;
  /** The in-flight chains' change count when walked (ChainIndex: a walk is stale once it moved on). */
  stamp: number;
}

/** The per-rank scratch and reused buffers of walks over one index (one walk open at a time). */
export class PrefixWalker {
  // The query's hashes copied into one reused buffer, read as u32 word pairs (no per-query view or bigint).
  private queryHashes = new BigUint64Array(32);
  private queryWords = new Int32Array(this.queryHashes.buffer);
  // Per-rank scratch: depth per tier, and which ranks the continuations touched.
  private dev = new Int32Array(64);
  private hst = new Int32Array(64);
  private dsk = new Int32Array(64);
  private touched = new Int32Array(64);
  private touchedCount = 0;
  private kept = new Int32Array(64);
  private mark = new Int32Array(64);
  // Each rank's two fingerprint weights, cached (weightA/weightB of its id).
  private wA = Int32Array.from({ length: 64 }, (_, s) => weightA(s));
  private wB = Int32Array.from({ length: 64 }, (_, s) => weightB(s));
  private stamp = 0;
  /** Whether the open walk wrote any host or disk continuation. */
  private lowerWritten = false;
  /** Block 0's holder list id of the open walk (the ranks its device walk wrote); -1 for none. */
  private firstList = -1;
  /** The one Walk value, rewritten by each begin(). */
  private readonly walk: Walk = { device: this.dev, host: this.hst, disk: this.dsk, floor: 0, hashes: [], count: 0, deepest: 0, pathIds: new Int32Array(32), stamp: 0 };

  /** Whether the per-rank scratch covers `rankId`. */
  fits(rankId: number): boolean {
    return rankId < this.dev.length;
  }

  /**
   * Walks `hashes[0, count)` through `device`, then `host` and `disk` when given: per rank s,
   * device[s] = its device prefix, host[s] / disk[s] = the continuations after it. With a `cover`
   * (a set every rank read is in), its ranks' device depths may come as max(device[s], floor):
   * when block 0's holders are exactly the cover, the ranks that drop out together at the prefix
   * they all share are not written one by one. end() must come before the next walk or change.
   */
  begin(device: TierIndex, host: TierIndex | undefined, disk: TierIndex | undefined, hashes: ArrayLike<bigint>, count: number, cover: RankSet | undefined): Walk {
    const w = this.walk;
    w.device = this.dev;
    w.host = this.hst;
    w.disk = this.dsk;
    w.floor = 0;
    w.hashes = hashes;
    w.count = count;
    w.deepest = 0;
    this.touchedCount = 0;
    this.firstList = -1;
    if (count === 0) return w;
    const words = this.wordsOf(hashes, count);
    if (w.pathIds.length < count) w.pathIds = new Int32Array(Math.max(count, w.pathIds.length * 2));
    w.floor = this.deviceWalk(device, words, count, cover);
    if (host !== undefined) this.continuation(host, words, count, this.hst, this.dev, undefined);
    if (disk !== undefined) this.continuation(disk, words, count, this.dsk, this.dev, this.hst);
    return w;
  }

  /** Clears the per-rank scratch of begin() (only the ranks the walk wrote); `device` unchanged since. */
  end(device: TierIndex): void {
    const { touched, dev, hst, dsk } = this;
    // The device walk wrote only block 0's holders (its list is unchanged until now); the
    // continuations wrote the ranks in `touched`.
    const first = this.firstList;
    const lists = device.lists;
    const slab = lists.slab;
    const lo = first === -1 ? 0 : lists.meta[first * META + OFF]!;
    const hi = first === -1 ? 0 : lo + lists.meta[first * META + LEN]!;
    // A long list (a prefix every rank shares) is cleared faster as one block than rank by rank.
    const wide = hi - lo > dev.length >> 3;
    if (wide) dev.fill(0);
    else for (let k = lo; k < hi; k++) dev[slab[k]!] = 0;
    const nt = this.touchedCount;
    for (let t = 0; t < nt; t++) {
      const s = touched[t]!;
      dev[s] = hst[s] = dsk[s] = 0;
    }
    if (this.lowerWritten) {
      if (wide) {
        hst.fill(0);
        dsk.fill(0);
      } else for (let k = lo; k < hi; k++) hst[slab[k]!] = dsk[slab[k]!] = 0;
    }
    this.touchedCount = 0;
    this.firstList = -1;
    this.lowerWritten = false;
  }

  /**
   * The device walk: dev[s] = s's device prefix. Every rank it gives a depth is in block 0's
   * holder list (firstList, which end() clears from: no copy of it is kept).
   */
  private deviceWalk(dt: TierIndex, words: Int32Array, count: number, cover: RankSet | undefined): number {
    const dev = this.dev;
    // The ranks still matching (the holders of blocks 0..i-1) go on while they hold block i.
    // When block i's holder set equals that set (same size and fingerprint: the common case, a
    // shared prefix held by the same ranks) nobody drops out and nothing is written; otherwise
    // the set is intersected and the ones that drop out get their depth. The set is block 0's
    // list itself until the first intersection copies the survivors out.
    const id0 = dt.total > 0 ? dt.holders.get(words[0]!, words[1]!) : -1;
    this.firstList = id0;
    if (id0 === -1) return 0;
    const path = this.walk.pathIds;
    path[0] = id0;
    const { slab, meta } = dt.lists;
    // The set is read at `active[base + a]`: block 0's list in the slab, then the copy in `kept`.
    let active = slab;
    let base = meta[id0 * META + OFF]!;
    let n0 = meta[id0 * META + LEN]!;
    let fpA = meta[id0 * META + FPA]!;
    let fpB = meta[id0 * META + FPB]!;
    let depth = 1;
    // Block 0's holders are the cover: while the set is still that list, its ranks share one
    // depth, which the caller reads as the floor instead of a write per rank.
    let dense = cover !== undefined && cover.size === n0 && cover.fpA === fpA && cover.fpB === fpB;
    let floor = 0;
    const mark = this.mark;
    const wA = this.wA;
    const wB = this.wB;
    const kept = this.kept;
    let prev = id0;
    for (let i = 1; i < count && n0 > 0; i++) {
      const id = nextList(dt, meta, prev, words[2 * i]!, words[2 * i + 1]!);
      if (id === -1) break;
      path[i] = id;
      prev = id;
      const r = id * META;
      const off = meta[r + OFF]!;
      const len = meta[r + LEN]!;
      if (len === n0 && meta[r + FPA] === fpA && meta[r + FPB] === fpB) {
        depth = i + 1;
        continue;
      }
      let n = 0;
      if (dense) {
        // The survivors are block i's holders in the cover; the rest keep the floor.
        for (let k = off, end = k + len; k < end; k++) if (cover!.has(slab[k]!)) kept[n++] = slab[k]!;
        floor = depth;
        dense = false;
      } else {
        const stamp = (this.stamp = (this.stamp + 1) & 0x7fffffff || 1);
        for (let k = off, end = k + len; k < end; k++) mark[slab[k]!] = stamp;
        for (let a = 0; a < n0; a++) {
          const s = active[base + a]!;
          if (mark[s] === stamp) kept[n++] = s;
          else dev[s] = depth;
        }
      }
      active = kept;
      base = 0;
      n0 = n;
      fpA = 0;
      fpB = 0;
      for (let a = 0; a < n; a++) {
        fpA = (fpA + wA[kept[a]!]!) | 0;
        fpB = (fpB + wB[kept[a]!]!) | 0;
      }
      if (n > 0) depth = i + 1;
    }
    this.walk.deepest = depth;
    if (dense) return depth;
    for (let a = 0; a < n0; a++) dev[active[base + a]!] = depth;
    return floor;
  }

  /** Extends `out[s]` while s holds block base(s) + out[s] in this tier, walking blocks in order. */
  private continuation(tier: TierIndex, words: Int32Array, count: number, out: Int32Array, a: Int32Array, b: Int32Array | undefined): void {
    if (tier.total === 0) return;
    const touched = this.touched;
    const { slab, meta } = tier.lists;
    let prev = -1;
    for (let i = 0; i < count; i++) {
      const w0 = words[2 * i]!;
      const w1 = words[2 * i + 1]!;
      const id = prev === -1 ? tier.holders.get(w0, w1) : nextList(tier, meta, prev, w0, w1);
      prev = id;
      if (id === -1) continue;
      for (let k = meta[id * META + OFF]!, end = k + meta[id * META + LEN]!; k < end; k++) {
        const s = slab[k]!;
        const base = a[s]! + (b === undefined ? 0 : b[s]!);
        if (base + out[s]! === i) {
          // Recorded once: block 0's holders (a device depth) are cleared from the first list.
          if (this.dev[s] === 0 && this.hst[s] === 0 && this.dsk[s] === 0) touched[this.touchedCount++] = s;
          out[s]!++;
          this.lowerWritten = true;
        }
      }
    }
  }

  /** Sizes the per-rank scratch for ids up to `rankId` (every indexed rank must fit). */
  grow(rankId: number): void {
    const size = Math.max(rankId + 1, this.dev.length * 2);
    const grow = (old: Int32Array) => {
      const next = new Int32Array(size);
      next.set(old);
      return next;
    };
    this.dev = grow(this.dev);
    this.hst = grow(this.hst);
    this.dsk = grow(this.dsk);
    this.mark = grow(this.mark);
    this.kept = grow(this.kept);
    // A rank is touched at most once per walk (device walk, or the first continuation step).
    this.touched = grow(this.touched);
    const from = this.wA.length;
    const wA = new Int32Array(size);
    const wB = new Int32Array(size);
    wA.set(this.wA);
    wB.set(this.wB);
    for (let s = from; s < size; s++) {
      wA[s] = weightA(s);
      wB[s] = weightB(s);
    }
    this.wA = wA;
    this.wB = wB;
  }

  /** Hashes [from, from + count) as u32 word pairs, in a reused buffer (valid until the next call). */
  wordsOf(seqHashes: ArrayLike<bigint>, count: number, from = 0): Int32Array {
    if (this.queryHashes.length < count) {
      this.queryHashes = new BigUint64Array(Math.max(count, this.queryHashes.length * 2));
      this.queryWords = new Int32Array(this.queryHashes.buffer);
    }
    const words = this.queryWords;
    if (seqHashes instanceof BigUint64Array) {
      // A typed copy (memcpy, no bigint read) into the reused buffer: no view of the caller's array.
      this.queryHashes.set(from === 0 && seqHashes.length === count ? seqHashes : seqHashes.subarray(from, from + count));
      return words;
    }
    for (let i = 0; i < count; i++) {
      splitU64(seqHashes[from + i]!);
      words[2 * i] = SPLIT[0]!;
      words[2 * i + 1] = SPLIT[1]!;
    }
    return words;
  }
}
