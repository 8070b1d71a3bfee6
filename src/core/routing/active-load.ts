// The router's own view of each (worker, rank)'s load, from the requests it sent there (as
// Dynamo's ActiveSequences): the full-block sequence hashes of every in-flight prompt, held as
// chains in one index keyed by block hash (ChainIndex), so a block shared by several in-flight
// requests counts once and a decision walks the prompt's blocks once for every candidate; and
// the prefill tokens still outstanding (added at routing, dropped at the request's first token).
// A request's load stays until it finishes, even when its candidate left routing meanwhile (the
// frontend fails a vanished worker's requests at once, which finishes them).
//
// Deferred tails: a prompt's blocks after the first one no in-flight prompt holds are private to
// it (a sequence hash names its whole prefix), so they are only counted, not indexed, until a
// later prompt's walk reaches that first new block with the same next block; then the tail is
// indexed before the walk is read. Counts stay exact and most blocks never touch the index.
import { ChainIndex } from "../index/chain-index.ts";
import type { Walk } from "../index/prefix-walk.ts";
import type { RankSet } from "../index/tier-index.ts";

/** One routed request's share of its candidate's load, until finish(). */
export interface ActiveRequest {
  readonly rankId: number;
  /** Full-block sequence hashes of the prompt. */
  readonly hashes: ArrayLike<bigint>;
  /** The tracker's ids of blocks [0, indexed) (released by id, without hashing again); may be longer than the prompt. */
  readonly blockIds: Int32Array;
  /** Blocks [0, indexed) are in the index; the rest are counted only (a deferred tail). */
  indexed: number;
  /** Prefill tokens still counted against the rank (0 once the first token arrived). */
  prefillTokens: number;
  done: boolean;
  /** The next request deferred on the same block (the tracker's list). */
  nextDeferred: ActiveRequest | undefined;
}

const NO_HASHES: readonly bigint[] = [];
const NO_IDS = new Int32Array(0);

/** Spare id arrays kept per power-of-two size (a decision then allocates only its request). */
const SPARE_ID_ARRAYS = 64;

export class ActiveLoad {
  private readonly blocks = new ChainIndex();
  private prefill = new Float64Array(64);
  /** Requests with a deferred tail, by the list id of their last indexed block: a linked list's head. */
  private readonly deferred: (ActiveRequest | undefined)[] = [];
  private deferredCount = 0;
  /** Released id arrays by log2 of their length. */
  private readonly spareIds: Int32Array[][] = [];

  /** Sizes the per-rank arrays for ids up to `rankId` (reads by id stay in range). */
  reserve(rankId: number): void {
    if (rankId >= this.prefill.length) this.grow(rankId);
    this.blocks.reserve(rankId);
  }

  /**
   * Counts a routed request: its prompt blocks as active, its uncached prompt tokens as prefill.
   * Walks the prompt's blocks first; a caller that just walked them (the router's decision) passes
   * that walk to addWalked() instead.
   */
  add(rankId: number, hashes: ArrayLike<bigint>, prefillTokens: number): ActiveRequest {
    this.reserve(rankId);
    const walk = this.beginPrefixes(hashes, hashes.length);
    const held = walk.device[rankId]!;
    this.endPrefixes();
    return this.addWalked(rankId, walk, held, prefillTokens);
  }

  /**
   * add() from the walk of the whole prompt that chose the rank (beginPrefixes(), ended or not),
   * `held` its depth for the rank. A walk taken before the last add or finish is refused (RangeError).
   */
  addWalked(rankId: number, walk: Walk, held: number, prefillTokens: number): ActiveRequest {
    this.reserve(rankId);
    const hashes = walk.hashes;
    const blockIds = this.idArray(hashes.length);
    const indexed = this.blocks.attach(walk, rankId, held, blockIds, true);
    const req: ActiveRequest = { rankId, hashes, blockIds, indexed, prefillTokens, done: false, nextDeferred: undefined };
    if (indexed < hashes.length) {
      this.blocks.addUnindexed(rankId, hashes.length - indexed);
      this.defer(req);
    }
    this.prefill[rankId] = this.prefill[rankId]! + prefillTokens;
    return req;
  }

  /**
   * Counts only a routed request's prefill tokens, none of its blocks (a router that does not track
   * active blocks, as Dynamo's prefill router: its workers hold no decode load).
   */
  addPrefillOnly(rankId: number, prefillTokens: number): ActiveRequest {
    this.reserve(rankId);
    this.prefill[rankId] = this.prefill[rankId]! + prefillTokens;
    return { rankId, hashes: NO_HASHES, blockIds: NO_IDS, indexed: 0, prefillTokens, done: false, nextDeferred: undefined };
  }

  /** The request produced its first token: its prefill is no longer outstanding. */
  firstToken(req: ActiveRequest): void {
    if (req.done || req.prefillTokens === 0) return;
    this.prefill[req.rankId] = Math.max(0, this.prefill[req.rankId]! - req.prefillTokens);
    req.prefillTokens = 0;
  }

  /** The request ended (finished, failed or cancelled): all of its load is released. Idempotent. */
  finish(req: ActiveRequest): void {
    if (req.done) return;
    this.firstToken(req);
    req.done = true;
    const total = req.hashes.length;
    if (req.indexed < total) {
      this.unmark(req);
      this.blocks.addUnindexed(req.rankId, req.indexed - total);
    }
    this.blocks.detach(req.rankId, req.blockIds, req.indexed);
    const spare = this.spareIds[Math.log2(req.blockIds.length)];
    if (spare !== undefined && spare.length < SPARE_ID_ARRAYS) spare.push(req.blockIds);
  }

  /** Distinct blocks of the rank's in-flight prompts. */
  activeBlocks(rankId: number): number {
    return this.blocks.footprint(rankId);
  }

  activePrefillTokens(rankId: number): number {
    return rankId < this.prefill.length ? this.prefill[rankId]! : 0;
  }

  /** Active blocks by rank id (read-only; reserve() the ids read). */
  activeBlocksByRank(): Int32Array {
    return this.blocks.footprints();
  }

  /** Outstanding prefill tokens by rank id (read-only; reserve() the ids read). */
  prefillByRank(): Float64Array {
    return this.prefill;
  }

  /**
   * Per rank, the longest prefix of `hashes[0, count)` already active there, at device[rankId] of
   * the returned walk (reserve() the ids read; with a `cover`, max(device[rankId], floor) for its
   * ranks: PrefixWalker.begin) until endPrefixes(), which must come before the next change.
   */
  beginPrefixes(hashes: ArrayLike<bigint>, count: number, cover?: RankSet): Walk {
    const walk = this.blocks.walk(hashes, count, cover);
    // The walk stops at the deepest indexed block; a deferred tail continuing there with this
    // prompt's next block is indexed now, and its rank's depth raised to match.
    const d = walk.deepest;
    if (this.deferredCount > 0 && d > 0 && d < count) this.indexTailsAt(walk, d, count);
    return walk;
  }

  endPrefixes(): void {
    this.blocks.endWalk();
  }

  /**
   * Indexes the deferred tails that continue `hashes[0, d)` (d = the walk's deepest block) with
   * block d, as far as they match `hashes[0, count)`: the rest of a tail stays private to its
   * request (no prompt reaches it yet, and a long prompt's tail is not indexed for a short query).
   * No walk again: the tail's blocks were held by no one, so only its rank's depth changes, from d
   * (it holds blocks 0..d-1) to the tail's end, written into the open walk.
   */
  private indexTailsAt(walk: Walk, d: number, count: number): void {
    let req = this.deferred[walk.pathIds[d - 1]!];
    if (req === undefined) return;
    const hashes = walk.hashes;
    const depth = walk.device;
    const next = hashes[d]!;
    for (let after = req.nextDeferred; req !== undefined; req = after, after = req?.nextDeferred) {
      // A sequence hash names its position: a tail continuing block d - 1 starts at block d.
      if (req.hashes[d] !== next) continue;
      this.unmark(req);
      const total = req.hashes.length;
      const limit = Math.min(total, count);
      let to = d + 1;
      while (to < limit && req.hashes[to] === hashes[to]) to++;
      this.blocks.addUnindexed(req.rankId, d - to);
      this.blocks.extend(walk, req.rankId, req.hashes, req.blockIds, d, to);
      req.indexed = to;
      if (req.indexed < total) this.defer(req);
      depth[req.rankId] = to;
    }
  }

  /** Puts a request with an unindexed tail on the deferred list of its last indexed block. */
  private defer(req: ActiveRequest): void {
    const marker = req.blockIds[req.indexed - 1]!;
    req.nextDeferred = this.deferred[marker];
    this.deferred[marker] = req;
    this.deferredCount++;
  }

  /** Takes a request off the deferred list of its last indexed block. */
  private unmark(req: ActiveRequest): void {
    const marker = req.blockIds[req.indexed - 1]!;
    let at = this.deferred[marker];
    if (at === req) this.deferred[marker] = req.nextDeferred;
    else {
      while (at!.nextDeferred !== req) at = at!.nextDeferred;
      at!.nextDeferred = req.nextDeferred;
    }
    req.nextDeferred = undefined;
    this.deferredCount--;
  }

  /** An id array of at least `n` entries (a power of two long), reused when one is spare. */
  private idArray(n: number): Int32Array {
    const c = n <= 1 ? 0 : 32 - Math.clz32(n - 1);
    while (this.spareIds.length <= c) this.spareIds.push([]);
    return this.spareIds[c]!.pop() ?? new Int32Array(1 << c);
  }

  private grow(rankId: number): void {
    const size = Math.max(rankId + 1, this.prefill.length * 2);
    const prefill = new Float64Array(size);
    prefill.set(this.prefill);
    this.prefill = prefill;
  }
}
