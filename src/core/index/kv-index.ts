// Which rank (one (worker, rank), by its numeric rank id) holds which blocks, one map per tier, fed
// by KV events.
// A sequence hash names a whole prefix (it chains every block before it), so a set keyed by it is a
// radix tree flattened: node = sequence hash, children implied by the parent chain. Per tier, two
// views:
//   - per rank, the set of hashes it holds (a U64Map used as a set): removals, footprints,
//     clears;
//   - per hash, the list of ranks holding it (the inverted view a router walks: a decision
//     touches the prompt's ≤ N nodes and their holders, never one map per candidate; with 1,000
//     candidates the per-candidate lookups were the whole cost of a decision, bench/router-decision.ts).
import { grown } from "../kv/grown.ts";
import type { KvTier } from "../kv/kv-events.ts";
import { SPLIT, splitU64, U64Map } from "../kv/u64-map.ts";
import { mix32 } from "../random/rng.ts";
import { HolderLists } from "./holder-lists.ts";

/** Two independent 32-bit weights per rank: a holder list's sums of them fingerprint its set. */
// Kept as int32 (`| 0`) end to end: a uint32 past 2^31 is a double to the JIT, and a sum that
// changes representation mid-loop deoptimises the walk (sums compare equal mod 2^32 either way).
const weightA = (s: number) => mix32(s * 2 + 1) | 0;
const weightB = (s: number) => (mix32(s * 2 + 2) ^ 0x5bd1e995) | 0;

/** Index tiers: the engine's two plus disk, which other publishers (and agents) report. */
export type IndexTier = KvTier | "disk";

/** The part of a KV event (engine or router event) the index needs. */
export interface IndexEvent {
  readonly kind: "stored" | "removed" | "cleared";
  readonly tier?: IndexTier;
  readonly blockHashes?: readonly bigint[];
  /** A store's parent block; a store whose parent the rank does not hold is an orphan (dropped). */
  readonly parentHash?: bigint | null;
}

/** One tier: per rank, the set of hashes it holds; per hash, the ranks holding it. */
class TierIndex {
  readonly byRank = new Map<number, U64Map>();
  readonly holders = new U64Map();
  readonly lists = new HolderLists();
  /** Per list: sums (mod 2^32) of its members' two weights, kept with the list (set fingerprints). */
  fpA = new Int32Array(256);
  fpB = new Int32Array(256);
  total = 0;
  /** Blocks per rank, dense by rank id (footprints without a map lookup; typed: the router reads it once per candidate). */
  counts = new Int32Array(64);

  /** Makes counts[0..rankId] present. */
  grow(rankId: number): void {
    const next = new Int32Array(Math.max(rankId + 1, this.counts.length * 2));
    next.set(this.counts);
    this.counts = next;
  }

  own(rankId: number): U64Map {
    let set = this.byRank.get(rankId);
    if (set === undefined) this.byRank.set(rankId, (set = new U64Map()));
    return set;
  }

  /** Whether the last acquire() found the block held by no rank. */
  opened = false;
  /** Per list, its block's hash words (to close it by id). */
  private keyW0 = new Int32Array(256);
  private keyW1 = new Int32Array(256);

  /**
   * Adds the block to the rank's set `own` (valued with the block's list id, so removal needs no
   * holder lookup). One probe of the holders: a block no rank holds is new to this rank too.
   */
  store(own: U64Map, rankId: number, w0: number, w1: number): void {
    let id = this.holders.getOrInsert(w0, w1, this.nextListId());
    if (id === -1) {
      id = this.nextListId();
      this.openList(id, w0, w1);
      own.setIfAbsent(w0, w1, id);
    } else if (!own.setIfAbsent(w0, w1, id)) return;
    this.list(id, rankId);
  }

  /** The id openList() will take next. */
  private nextListId(): number {
    return this.lists.nextId();
  }

  /** Takes list `id` (= nextListId()) for the block (w0, w1); the caller maps the block to it. */
  private openList(id: number, w0: number, w1: number): void {
    this.lists.open();
    if (id >= this.fpA.length) {
      const size = this.fpA.length * 2;
      this.fpA = grown(this.fpA, size);
      this.fpB = grown(this.fpB, size);
      this.keyW0 = grown(this.keyW0, size);
      this.keyW1 = grown(this.keyW1, size);
    }
    this.keyW0[id] = w0;
    this.keyW1[id] = w1;
    this.fpA[id] = 0;
    this.fpB[id] = 0;
  }

  /** Adds a holder to the block's list (its fingerprint and the rank's count with it). */
  private list(id: number, rankId: number): void {
    this.total++;
    this.counts[rankId]!++;
    this.lists.push(id, rankId);
    this.fpA[id] = (this.fpA[id]! + weightA(rankId)) | 0;
    this.fpB[id] = (this.fpB[id]! + weightB(rankId)) | 0;
  }

  /**
   * One reference more (an index of blocks in use, see KvIndex.attach) in the rank's set `own`,
   * which holds each block's count: the rank joins the block's holder list with its first
   * reference. Returns the block's list id, which stays its own while any reference is held
   * (release by id needs no hashing).
   */
  acquire(own: U64Map, rankId: number, w0: number, w1: number): number {
    let id = this.holders.getOrInsert(w0, w1, this.nextListId());
    this.opened = id === -1;
    if (id === -1) {
      id = this.nextListId();
      this.openList(id, w0, w1);
    }
    if (own.increment(w0, w1) === 1) this.list(id, rankId);
    return id;
  }

  /** Drops one reference of `rankId` to the block of list `id`; the rank leaves its list with the last (true then). */
  release(own: U64Map, rankId: number, id: number): boolean {
    const w0 = this.keyW0[id]!;
    const w1 = this.keyW1[id]!;
    if (own.decrement(w0, w1) !== 0) return false;
    this.total--;
    this.counts[rankId]!--;
    this.unlist(id, rankId, w0, w1);
    return true;
  }

  /** Takes the block out of the rank's set `set`; false when the rank did not hold it. */
  remove(set: U64Map, rankId: number, w0: number, w1: number): boolean {
    const id = set.delete(w0, w1);
    if (id === -1) return false;
    this.total--;
    this.counts[rankId]!--;
    this.unlist(id, rankId, w0, w1);
    return true;
  }

  removeRank(rankId: number): void {
    const set = this.byRank.get(rankId);
    if (set === undefined) return;
    this.byRank.delete(rankId);
    this.total -= set.size;
    this.counts[rankId] = 0;
    set.forEachWords((w0, w1, id) => this.unlist(id, rankId, w0, w1));
  }

  /** Takes `rankId` out of list `id` (the block (w0, w1)'s). */
  private unlist(id: number, rankId: number, w0: number, w1: number): void {
    if (!this.lists.remove(id, rankId)) return;
    this.fpA[id] = (this.fpA[id]! - weightA(rankId)) | 0;
    this.fpB[id] = (this.fpB[id]! - weightB(rankId)) | 0;
    if (this.lists.len[id] === 0) {
      this.holders.delete(w0, w1);
      this.lists.close(id);
    }
  }
}

/** Per-rank overlaps of one query (KvIndex.beginOverlaps): index by rank id, 0 past the end. */
export interface OverlapsByRank {
  device: Int32Array;
  host: Int32Array;
  disk: Int32Array;
  /**
   * Every rank of the query's cover holds at least this device prefix: its depth is
   * max(device[s], floor). 0 without a cover, or when block 0's holders are not exactly the cover.
   */
  floor: number;
}

/**
 * A set of rank ids kept with its size and fingerprint (as a holder list keeps its own), so a
 * walk can tell at once that block 0's holders are exactly this set (the router's candidates).
 */
export class RankSet {
  size = 0;
  fpA = 0;
  fpB = 0;
  private member = new Uint8Array(64);

  has(rankId: number): boolean {
    return rankId < this.member.length && this.member[rankId] === 1;
  }

  add(rankId: number): void {
    if (this.has(rankId)) return;
    if (rankId >= this.member.length) this.member = grown(this.member, Math.max(rankId + 1, this.member.length * 2));
    this.member[rankId] = 1;
    this.size++;
    this.fpA = (this.fpA + weightA(rankId)) | 0;
    this.fpB = (this.fpB + weightB(rankId)) | 0;
  }

  delete(rankId: number): void {
    if (!this.has(rankId)) return;
    this.member[rankId] = 0;
    this.size--;
    this.fpA = (this.fpA - weightA(rankId)) | 0;
    this.fpB = (this.fpB - weightB(rankId)) | 0;
  }
}

export class KvIndex {
  private readonly tiers: Record<IndexTier, TierIndex>;
  /** Removals of blocks the index did not hold (events out of order or lost). */
  unknownRemovals = 0;
  /** Stores dropped because the rank held no block they chain from (events lost or joined late). */
  orphanStores = 0;
  private active: number[] = [];
  private sets: (U64Map | undefined)[] = [];
  // The query's hashes copied into one reused buffer, read as u32 word pairs (no per-query view or bigint).
  private queryHashes = new BigUint64Array(32);
  private queryWords = new Int32Array(this.queryHashes.buffer);
  // Per-rank scratch of overlaps(): depth per tier, and which ranks were touched.
  private dev = new Int32Array(64);
  private hst = new Int32Array(64);
  private dsk = new Int32Array(64);
  private touched = new Int32Array(64);
  private touchedCount = 0;
  private readonly query: OverlapsByRank = { device: this.dev, host: this.hst, disk: this.dsk, floor: 0 };
  private walk = new Int32Array(64);
  private mark = new Int32Array(64);
  // Each rank's two fingerprint weights, cached (weightA/weightB of its id).
  private wA = Int32Array.from({ length: 64 }, (_, s) => weightA(s));
  private wB = Int32Array.from({ length: 64 }, (_, s) => weightB(s));
  private stamp = 0;
  /** Whether the open query wrote any host or disk continuation. */
  private lowerWritten = false;
  /** Block 0's holder list id of the open query (the ranks its device walk wrote); -1 for none. */
  private firstList = -1;
  /** The longest device prefix any rank holds, of the last beginOverlaps() query. */
  deepest = 0;
  /** The list ids of the last query's blocks [0, deepest): valid until a detach (see attach). */
  private pathIds = new Int32Array(32);

  constructor() {
    this.tiers = { device: new TierIndex(), host: new TierIndex(), disk: new TierIndex() };
  }

  apply(rankId: number, event: IndexEvent): void {
    if (event.kind === "cleared") {
      // Engine events clear every tier; router events (protocol/router-events.ts) clear one.
      if (event.tier === undefined) this.removeRank(rankId);
      else this.clearTier(rankId, event.tier);
      return;
    }
    const tier = this.tiers[event.tier ?? "device"];
    const hashes = event.blockHashes ?? [];
    if (hashes.length === 0) return;
    if (event.kind === "stored") {
      // As Dynamo's radix tree: a chain that starts at an unknown parent can never be matched from
      // block 0, so it is dropped and counted rather than kept as an unreachable orphan.
      if (event.parentHash != null && !this.holds(rankId, event.parentHash)) {
        this.orphanStores++;
        return;
      }
      if (rankId >= this.dev.length) this.grow(rankId);
      if (rankId >= tier.counts.length) tier.grow(rankId);
      const own = tier.own(rankId);
      for (const h of hashes) {
        splitU64(h);
        tier.store(own, rankId, SPLIT[0]!, SPLIT[1]!);
      }
    } else {
      const set = tier.byRank.get(rankId);
      if (set === undefined) {
        this.unknownRemovals += hashes.length;
        return;
      }
      for (const h of hashes) {
        splitU64(h);
        if (!tier.remove(set, rankId, SPLIT[0]!, SPLIT[1]!)) this.unknownRemovals++;
      }
    }
  }

  applyAll(rankId: number, events: readonly IndexEvent[]): void {
    for (const e of events) this.apply(rankId, e);
  }

  /** Whether the rank holds the block in any tier. */
  holds(rankId: number, hash: bigint): boolean {
    splitU64(hash);
    const w0 = SPLIT[0]!;
    const w1 = SPLIT[1]!;
    const { device, host, disk } = this.tiers;
    return device.byRank.get(rankId)?.has(w0, w1) === true || host.byRank.get(rankId)?.has(w0, w1) === true || disk.byRank.get(rankId)?.has(w0, w1) === true;
  }

  /**
   * The router's tracker of blocks in use (an index fed by attach(), extend() and detach() only,
   * device tier): a rank's blocks are prefix-closed chains of in-flight prompts, and each block
   * the rank holds counts, in its set, the chains that end there plus its children the rank holds.
   * A block shared by several chains is thus held once, and a chain joins or leaves by touching the
   * blocks it adds or drops and the one it hangs from, never its whole shared prefix.
   *
   * attach: a chain of `hashes` on the rank, which holds its blocks [0, held) already — as the last
   * beginOverlaps() walked these very hashes, with nothing detached since (their ids are that
   * walk's). Adds blocks [held, to), with `untilNew` only up to the first block no rank held;
   * writes every block's list id to ids[i] (for extend() and detach()); returns the chain's end.
   */
  attach(rankId: number, hashes: ArrayLike<bigint>, ids: Int32Array, held: number, to: number, untilNew: boolean): number {
    this.reserve(rankId);
    const tier = this.tiers.device;
    const own = tier.own(rankId);
    const words = this.wordsOf(hashes, Math.max(held, to));
    const known = Math.min(held, this.deepest);
    const path = this.pathIds;
    for (let i = 0; i < known; i++) ids[i] = path[i]!;
    // Past the walk's deepest block: a deferred tail the walk indexed for this rank.
    for (let i = known; i < held; i++) ids[i] = tier.holders.get(words[2 * i]!, words[2 * i + 1]!);
    // The block the chain hangs from gains a child, or (nothing new) another chain ending there.
    // A stale `held` would corrupt every count after it: refuse it (nothing changed yet).
    if (held > 0 && (ids[held - 1]! < 0 || own.increment(words[2 * held - 2]!, words[2 * held - 1]!) === 1)) {
      if (ids[held - 1]! >= 0) own.decrement(words[2 * held - 2]!, words[2 * held - 1]!);
      throw new RangeError(`attach: rank ${rankId} does not hold block ${held - 1} of this prompt (a stale held prefix)`);
    }
    return this.addBlocks(own, rankId, words, 0, ids, held, to, untilNew);
  }

  /**
   * Moves the end of an attached chain from block from − 1 to block to − 1: blocks [from, to), which
   * no chain of the rank holds, are added (ids as attach). May run while a query is open (its
   * answers stay as they were, and endOverlaps() still clears them).
   */
  extend(rankId: number, hashes: ArrayLike<bigint>, ids: Int32Array, from: number, to: number): void {
    this.addBlocks(this.tiers.device.own(rankId), rankId, this.wordsOf(hashes, to - from, from), from, ids, from, to, false);
  }

  /**
   * Blocks [from, to) of a chain, new to the rank, each held once (words of block i at 2 × (i − base)):
   * with `untilNew`, only up to the first block no rank held. Returns the chain's new end.
   */
  private addBlocks(own: U64Map, rankId: number, words: Int32Array, base: number, ids: Int32Array, from: number, to: number, untilNew: boolean): number {
    const tier = this.tiers.device;
    for (let i = from; i < to; i++) {
      const k = 2 * (i - base);
      ids[i] = tier.acquire(own, rankId, words[k]!, words[k + 1]!);
      if (untilNew && tier.opened) return i + 1;
    }
    return Math.max(from, to);
  }

  /** Ends a chain of `rankId` (ids[0, end) from attach/extend): its blocks leave from the end while nothing else holds them. */
  detach(rankId: number, ids: Int32Array, end: number): void {
    const tier = this.tiers.device;
    const own = tier.byRank.get(rankId);
    if (own === undefined) return;
    for (let i = end - 1; i >= 0 && tier.release(own, rankId, ids[i]!); i--);
  }

  /** The list id of the last query's deepest block (-1 when it had none); valid until the next change. */
  deepestListId(): number {
    return this.deepest > 0 ? this.pathIds[this.deepest - 1]! : -1;
  }

  /** Counts `n` more (or fewer) blocks in the rank's device footprint that are not indexed. */
  addUnindexed(rankId: number, n: number): void {
    this.reserve(rankId);
    this.tiers.device.counts[rankId]! += n;
    this.tiers.device.total += n;
  }

  /** Sizes the per-rank arrays for ids up to `rankId`, so reads by a candidate's id stay in range. */
  reserve(rankId: number): void {
    if (rankId >= this.dev.length) this.grow(rankId);
    const { device, host, disk } = this.tiers; // no array per call: add() reaches this on every routed request
    if (rankId >= device.counts.length) device.grow(rankId);
    if (rankId >= host.counts.length) host.grow(rankId);
    if (rankId >= disk.counts.length) disk.grow(rankId);
  }

  /** Forgets everything a rank held (it left, or its stream was cleared). */
  removeRank(rankId: number): void {
    this.tiers.device.removeRank(rankId);
    this.tiers.host.removeRank(rankId);
    this.tiers.disk.removeRank(rankId);
  }

  /** Forgets what a rank held in one tier (a per-tier `cleared` router event). */
  clearTier(rankId: number, tier: IndexTier): void {
    this.tiers[tier].removeRank(rankId);
  }

  /** Blocks held per tier over every rank (the /metrics index size). */
  size(tier: IndexTier): number {
    return this.tiers[tier].total;
  }

  /**
   * Per candidate: the longest device prefix of `seqHashes[0, count)`, then the contiguous host
   * continuation after it, then the contiguous disk continuation after that, written
   * to device/host/disk[candidate index]. Walks the prompt's blocks and their holder lists once per
   * tier: cost grows with the holders of the prompt's blocks, not with the candidate count.
   */
  overlaps(seqHashes: ArrayLike<bigint>, count: number, candidates: readonly number[], device: Int32Array, host: Int32Array, disk: Int32Array): void {
    const n = candidates.length;
    const q = this.beginOverlaps(seqHashes, count);
    const size = q.device.length;
    for (let c = 0; c < n; c++) {
      const s = candidates[c]!;
      if (s < size) {
        device[c] = q.device[s]!;
        host[c] = q.host[s]!;
        disk[c] = q.disk[s]!;
      } else device[c] = host[c] = disk[c] = 0;
    }
    this.endOverlaps();
  }

  /**
   * overlaps() by rank id, for a caller that reads every candidate once anyway (the router):
   * the three overlaps of rank s are at device/host/disk[s] (0 past their length) until
   * endOverlaps(), which must come before the next query or event. With a `cover` (a set every
   * rank read is in), its ranks' device depths may come as max(device[s], floor) instead: when
   * block 0's holders are exactly the cover and nothing is indexed below device, the ranks that
   * drop out together at the prefix they all share are not written one by one.
   */
  beginOverlaps(seqHashes: ArrayLike<bigint>, count: number, cover?: RankSet): OverlapsByRank {
    const q = this.query;
    q.device = this.dev;
    q.host = this.hst;
    q.disk = this.dsk;
    q.floor = 0;
    this.touchedCount = 0;
    this.deepest = 0;
    this.firstList = -1;
    if (count === 0) return q;
    const words = this.wordsOf(seqHashes, count);
    if (this.pathIds.length < count) this.pathIds = new Int32Array(Math.max(count, this.pathIds.length * 2));
    q.floor = this.deviceWalk(words, count, this.hasLowerTiers() ? undefined : cover);
    this.continuation(this.tiers.host, words, count, this.hst, this.dev, undefined);
    this.continuation(this.tiers.disk, words, count, this.dsk, this.dev, this.hst);
    return q;
  }

  /** Clears the per-rank scratch of beginOverlaps() (only the ranks the query touched). */
  endOverlaps(): void {
    const { touched, dev, hst, dsk } = this;
    // The device walk wrote only block 0's holders (its list is unchanged until now); the
    // continuations wrote the ranks in `touched`.
    const first = this.firstList;
    const lists = this.tiers.device.lists;
    const slab = lists.slab;
    const lo = first === -1 ? 0 : lists.off[first]!;
    const hi = first === -1 ? 0 : lo + lists.len[first]!;
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

  /** Whether any block is indexed below device (host or disk): overlaps there can be non-zero. */
  hasLowerTiers(): boolean {
    return this.tiers.host.total > 0 || this.tiers.disk.total > 0;
  }

  /**
   * The device walk of overlaps(): dev[s] = s's device prefix. Every rank it gives a depth is in
   * block 0's holder list (firstList, which endOverlaps() clears from: no copy of it is kept).
   */
  private deviceWalk(words: Int32Array, count: number, cover: RankSet | undefined): number {
    const dev = this.dev;
    // The ranks still matching (the holders of blocks 0..i-1) go on while they hold block i.
    // When block i's holder set equals that set (same size and fingerprint: the common case, a
    // shared prefix held by the same ranks) nobody drops out and nothing is written; otherwise
    // the set is intersected and the ones that drop out get their depth. The set is block 0's
    // list itself until the first intersection copies the survivors out.
    const dt = this.tiers.device;
    const id0 = dt.total > 0 ? dt.holders.get(words[0]!, words[1]!) : -1;
    this.firstList = id0;
    if (id0 === -1) return 0;
    const path = this.pathIds;
    path[0] = id0;
    const { slab, off, len } = dt.lists;
    // The set is read at `active[base + a]`: block 0's list in the slab, then the copy in `kept`.
    let active = slab;
    let base = off[id0]!;
    let n0 = len[id0]!;
    let fpA = dt.fpA[id0]!;
    let fpB = dt.fpB[id0]!;
    let depth = 1;
    // Block 0's holders are the cover: while the set is still that list, its ranks share one
    // depth, which the caller reads as the floor instead of a write per rank.
    let dense = cover !== undefined && cover.size === n0 && cover.fpA === fpA && cover.fpB === fpB;
    let floor = 0;
    const mark = this.mark;
    const wA = this.wA;
    const wB = this.wB;
    const kept = this.walk;
    for (let i = 1; i < count && n0 > 0; i++) {
      const id = dt.holders.get(words[2 * i]!, words[2 * i + 1]!);
      if (id === -1) break;
      path[i] = id;
      if (len[id] === n0 && dt.fpA[id] === fpA && dt.fpB[id] === fpB) {
        depth = i + 1;
        continue;
      }
      let n = 0;
      if (dense) {
        // The survivors are block i's holders in the cover; the rest keep the floor.
        for (let k = off[id]!, end = k + len[id]!; k < end; k++) if (cover!.has(slab[k]!)) kept[n++] = slab[k]!;
        floor = depth;
        dense = false;
      } else {
        const stamp = (this.stamp = (this.stamp + 1) & 0x7fffffff || 1);
        for (let k = off[id]!, end = k + len[id]!; k < end; k++) mark[slab[k]!] = stamp;
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
    this.deepest = depth;
    if (dense) return depth;
    for (let a = 0; a < n0; a++) dev[active[base + a]!] = depth;
    return floor;
  }

  /** Extends `out[s]` while s holds block base(s) + out[s] in this tier, walking blocks in order. */
  private continuation(tier: TierIndex, words: Int32Array, count: number, out: Int32Array, a: Int32Array, b: Int32Array | undefined): void {
    if (tier.total === 0) return;
    const touched = this.touched;
    const { slab, off, len } = tier.lists;
    for (let i = 0; i < count; i++) {
      const id = tier.holders.get(words[2 * i]!, words[2 * i + 1]!);
      if (id === -1) continue;
      for (let k = off[id]!, end = k + len[id]!; k < end; k++) {
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

  /** Sizes the per-rank scratch for ids up to `rankId` (every stored rank fits: see apply). */
  private grow(rankId: number): void {
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
    this.walk = grow(this.walk);
    // A rank is touched at most once per query (device walk, or the first continuation step).
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

  /**
   * Longest device prefix of `seqHashes[0, count)` per candidate rank, written to
   * out[candidate index]. One pass: ranks drop out at their first miss.
   */
  deviceOverlaps(seqHashes: ArrayLike<bigint>, count: number, candidates: readonly number[], out: Int32Array): void {
    out.fill(0, 0, candidates.length);
    const byRank = this.tiers.device.byRank;
    const sets = this.sets;
    const active = this.active;
    active.length = 0;
    sets.length = candidates.length;
    for (let c = 0; c < candidates.length; c++) {
      const set = byRank.get(candidates[c]!);
      sets[c] = set;
      if (set !== undefined && set.size > 0) active.push(c);
    }
    if (active.length === 0) return;
    const words = this.wordsOf(seqHashes, count);
    for (let i = 0; i < count && active.length > 0; i++) {
      const w0 = words[2 * i]!;
      const w1 = words[2 * i + 1]!;
      let kept = 0;
      for (let a = 0; a < active.length; a++) {
        const c = active[a]!;
        if (sets[c]!.has(w0, w1)) {
          out[c] = i + 1;
          active[kept++] = c;
        }
      }
      active.length = kept;
    }
  }

  /** Blocks from `from` on that rank `rankId` holds on `tier` contiguously (the G2 / disk continuation). */
  hostContinuation(rankId: number, seqHashes: ArrayLike<bigint>, from: number, count: number, tier: IndexTier = "host"): number {
    const set = this.tiers[tier].byRank.get(rankId);
    if (set === undefined || set.size === 0 || from >= count) return 0;
    let j = from;
    while (j < count && set.hasBig(seqHashes[j]!)) j++;
    return j - from;
  }

  /** Blocks a rank holds in a tier (the index footprint used to break ties). */
  footprint(rankId: number, tier: IndexTier = "device"): number {
    const counts = this.tiers[tier].counts;
    return rankId < counts.length ? counts[rankId]! : 0;
  }

  /** Device footprints by rank id (read-only; ids past its end hold nothing): the router's tie-break read in its candidate loop. */
  deviceFootprints(): Int32Array {
    return this.tiers.device.counts;
  }

  /** Every hash a rank holds in a tier, in no particular order (tests). */
  blocksOf(rankId: number, tier: IndexTier): bigint[] {
    return this.tiers[tier].byRank.get(rankId)?.keyList() ?? [];
  }

  /** Hashes [from, from + count) as u32 word pairs, in a reused buffer. */
  private wordsOf(seqHashes: ArrayLike<bigint>, count: number, from = 0): Int32Array {
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
