// The router's in-flight chains (as Dynamo's ActiveSequences keeps them): per rank, the blocks of
// the prompts it was sent and has not finished, one device tier fed by attach/extend/detach only.
// A chain is attached from an explicit Walk value, never from remembered state: a walk taken
// before the chains last changed is refused by its stamp, so a stale one cannot be used.
import type { U64Map } from "../kv/u64-map.ts";
import { PrefixWalker, type Walk } from "./prefix-walk.ts";
import { type RankSet, TierIndex } from "./tier-index.ts";

/**
 * A rank's blocks are prefix-closed chains of in-flight prompts, and each block the rank holds
 * counts, in its set, the chains that end there plus its children the rank holds. A block shared
 * by several chains is thus held once, and a chain joins or leaves by touching the blocks it adds
 * or drops and the one it hangs from, never its whole shared prefix.
 */
export class ChainIndex {
  private readonly tier = new TierIndex();
  private readonly walker = new PrefixWalker();
  /** Bumped by every attach and detach: a walk taken before is stale (its depths and list ids may be). */
  private changes = 0;

  /**
   * Per rank, the longest prefix of `hashes[0, count)` its chains hold, at device[rankId] (with a
   * `cover`, max(device[rankId], floor) for its ranks: PrefixWalker.begin) until endWalk(), which
   * must come before the next attach or detach. The Walk itself stays usable for one attach().
   */
  walk(hashes: ArrayLike<bigint>, count: number, cover?: RankSet): Walk {
    const w = this.walker.begin(this.tier, undefined, undefined, hashes, count, cover);
    w.stamp = this.changes;
    return w;
  }

  endWalk(): void {
    this.walker.end(this.tier);
  }

  /**
   * A chain of `walk.hashes[0, walk.count)` on the rank, which holds its blocks [0, held) already
   * (`held` read from this very walk: its depth for the rank). Adds blocks [held, count), with
   * `untilNew` only up to the first block no rank held; writes every block's list id to ids[i]
   * (for extend() and detach()); returns the chain's end. Throws (changing nothing) on a stale
   * walk or a `held` the rank does not hold.
   */
  attach(walk: Walk, rankId: number, held: number, ids: Int32Array, untilNew: boolean): number {
    if (walk.stamp !== this.changes) throw new RangeError(`attach: a stale walk (chains were attached or detached since it was taken): walk again`);
    this.reserve(rankId);
    const tier = this.tier;
    const own = tier.own(rankId);
    const to = walk.count;
    const words = this.walker.wordsOf(walk.hashes, Math.max(held, to));
    const known = Math.min(held, walk.deepest);
    const path = walk.pathIds;
    for (let i = 0; i < known; i++) ids[i] = path[i]!;
    // Past the walk's deepest block: a deferred tail the walk indexed for this rank.
    for (let i = known; i < held; i++) ids[i] = tier.holders.get(words[2 * i]!, words[2 * i + 1]!);
    // The block the chain hangs from gains a child, or (nothing new) another chain ending there.
    // A wrong `held` would corrupt every count after it: refuse it (nothing changed yet).
    if (held > 0 && (ids[held - 1]! < 0 || own.increment(words[2 * held - 2]!, words[2 * held - 1]!) === 1)) {
      if (ids[held - 1]! >= 0) own.decrement(words[2 * held - 2]!, words[2 * held - 1]!);
      throw new RangeError(`attach: rank ${rankId} does not hold block ${held - 1} of this prompt (a stale held prefix)`);
    }
    this.changes++;
    // Blocks the walk found held by some rank come with their list ids (its path): no hashing.
    const listed = Math.min(walk.deepest, to);
    for (let i = held; i < listed; i++) ids[i] = tier.acquireListed(own, rankId, path[i]!, words[2 * i]!, words[2 * i + 1]!);
    return this.addBlocks(own, rankId, words, 0, ids, Math.max(held, listed), to, untilNew);
  }

  /**
   * Moves the end of an attached chain from block from − 1 to block to − 1 while `walk` is open:
   * blocks [from, to), which no chain of the rank holds, are added (ids as attach). The walk's
   * other answers stay as they were and stay usable (the caller raises the rank's depth in it).
   */
  extend(walk: Walk, rankId: number, hashes: ArrayLike<bigint>, ids: Int32Array, from: number, to: number): void {
    if (walk.stamp !== this.changes) throw new RangeError(`extend: a stale walk (chains were attached or detached since it was taken)`);
    this.addBlocks(this.tier.own(rankId), rankId, this.walker.wordsOf(hashes, to - from, from), from, ids, from, to, false);
  }

  /**
   * Blocks [from, to) of a chain, new to the rank, each held once (words of block i at 2 × (i − base)):
   * with `untilNew`, only up to the first block no rank held. Returns the chain's new end.
   */
  private addBlocks(own: U64Map, rankId: number, words: Int32Array, base: number, ids: Int32Array, from: number, to: number, untilNew: boolean): number {
    const tier = this.tier;
    for (let i = from; i < to; i++) {
      const k = 2 * (i - base);
      ids[i] = tier.acquire(own, rankId, words[k]!, words[k + 1]!);
      if (untilNew && tier.opened) return i + 1;
    }
    return Math.max(from, to);
  }

  /** Ends a chain of `rankId` (ids[0, end) from attach/extend): its blocks leave from the end while nothing else holds them. */
  detach(rankId: number, ids: Int32Array, end: number): void {
    const tier = this.tier;
    const own = tier.byRank.get(rankId);
    if (own === undefined) return;
    this.changes++; // a closed list's id is reused: no walk before this one may attach
    for (let i = end - 1; i >= 0 && tier.release(own, rankId, ids[i]!); i--);
  }

  /** Counts `n` more (or fewer) blocks in the rank's footprint that are not indexed (deferred tails). */
  addUnindexed(rankId: number, n: number): void {
    this.reserve(rankId);
    this.tier.counts[rankId]! += n;
    this.tier.total += n;
  }

  /** Sizes the per-rank arrays for ids up to `rankId`, so reads by a candidate's id stay in range. */
  reserve(rankId: number): void {
    if (!this.walker.fits(rankId)) this.walker.grow(rankId);
    if (rankId >= this.tier.counts.length) this.tier.grow(rankId);
  }

  /** Distinct blocks of the rank's chains, counted tails included. */
  footprint(rankId: number): number {
    const counts = this.tier.counts;
    return rankId < counts.length ? counts[rankId]! : 0;
  }

  /** Footprints by rank id (read-only; ids past its end hold nothing): read in the router's candidate loop. */
  footprints(): Int32Array {
    return this.tier.counts;
  }
}
