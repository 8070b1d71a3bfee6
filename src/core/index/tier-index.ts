// One tier of a block index: per rank, the set of block hashes it holds; per hash, the list of
// ranks holding it, each list with a set fingerprint (sums of two per-rank weights) so a walk can
// tell two holder sets equal at once. Shared by the residency index and the in-flight chains.
import { grown } from "../kv/grown.ts";
import { U64Map } from "../kv/u64-map.ts";
import { mix32 } from "../random/rng.ts";
import { HolderLists, KW0, KW1, LEN, META, NEXT } from "./holder-lists.ts";

/** Two independent 32-bit weights per rank: a holder list's sums of them fingerprint its set. */
// Kept as int32 (`| 0`) end to end: a uint32 past 2^31 is a double to the JIT, and a sum that
// changes representation mid-loop deoptimises the walk (sums compare equal mod 2^32 either way).
export const weightA = (s: number) => mix32(s * 2 + 1) | 0;
export const weightB = (s: number) => (mix32(s * 2 + 2) ^ 0x5bd1e995) | 0;

/** One tier: per rank, the set of hashes it holds; per hash, the ranks holding it. */
export class TierIndex {
  readonly byRank = new Map<number, U64Map>();
  readonly holders = new U64Map();
  /** The holder lists, each with its fingerprint, block hash words and next-block hint (holder-lists.ts). */
  readonly lists = new HolderLists();
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

  /**
   * Adds the block to the rank's set `own` (valued with the block's list id, so removal needs no
   * holder lookup). One probe of the holders: a block no rank holds is new to this rank too.
   * Returns the block's list id; with `prev` (the list id of the block it chains from, or -1)
   * that block's next-block hint is pointed at it, so a walk down the chain need not hash.
   */
  store(own: U64Map, rankId: number, w0: number, w1: number, prev: number): number {
    const lists = this.lists;
    let id = this.holders.getOrInsert(w0, w1, lists.nextId());
    if (id === -1) {
      id = lists.open(w0, w1);
      own.setIfAbsent(w0, w1, id);
      this.list(id, rankId);
    } else if (own.setIfAbsent(w0, w1, id)) this.list(id, rankId);
    if (prev >= 0) lists.meta[prev * META + NEXT] = id;
    return id;
  }

  /** The list id of the block (w0, w1), or -1 when no rank holds it. */
  listOf(w0: number, w1: number): number {
    return this.holders.get(w0, w1);
  }

  /** Adds a holder to the block's list (its fingerprint and the rank's count with it). */
  private list(id: number, rankId: number): void {
    this.total++;
    this.counts[rankId]!++;
    this.lists.push(id, rankId, weightA(rankId), weightB(rankId));
  }

  /**
   * One reference more (the in-flight chains, see ChainIndex.attach) in the rank's set `own`,
   * which holds each block's count: the rank joins the block's holder list with its first
   * reference. Returns the block's list id, which stays its own while any reference is held
   * (release by id needs no hashing).
   */
  acquire(own: U64Map, rankId: number, w0: number, w1: number): number {
    let id = this.holders.getOrInsert(w0, w1, this.lists.nextId());
    this.opened = id === -1;
    if (id === -1) id = this.lists.open(w0, w1);
    if (own.increment(w0, w1) === 1) this.list(id, rankId);
    return id;
  }

  /** acquire() of a block whose list id `id` the caller knows (a walk's path): no hash probe of the holders. */
  acquireListed(own: U64Map, rankId: number, id: number, w0: number, w1: number): number {
    this.opened = false;
    if (own.increment(w0, w1) === 1) this.list(id, rankId);
    return id;
  }

  /** Drops one reference of `rankId` to the block of list `id`; the rank leaves its list with the last (true then). */
  release(own: U64Map, rankId: number, id: number): boolean {
    const m = this.lists.meta;
    const w0 = m[id * META + KW0]!;
    const w1 = m[id * META + KW1]!;
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
    const lists = this.lists;
    if (!lists.remove(id, rankId, weightA(rankId), weightB(rankId))) return;
    if (lists.meta[id * META + LEN] === 0) {
      this.holders.delete(w0, w1);
      lists.close(id);
    }
  }
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

