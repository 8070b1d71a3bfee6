// The oracle view: what a replay knows and a router cannot, every engine's true residency and load at the moment
// of a decision. Feeds the oracle router and judges every decision's regret (routing/regret.ts).
// Residency is an index fed each step's events as soon as the engine has taken the step (the
// router's index in kv mode gets them at the step's end): the blocks a running step computes
// are resident before a request routed now can be scheduled there, at that step's end at the earliest.
import { KvIndex } from "../index/kv-index.ts";
import type { KvEvent } from "../kv/kv-events.ts";
import { prefillTimeMs, RegretTally, uncachedTokens, type PrefillTiming, type RegretSummary } from "../routing/regret.ts";

/** The load regret's unit in replay (docs/DECISIONS.md "Regret and oracle"). */
export const REPLAY_LOAD_UNIT = "requests waiting or running on the (worker, rank)";

export class OracleView {
  readonly index = new KvIndex();
  /** Requests routed to each rank and not completed (waiting or running in its engine). */
  private readonly depth: Int32Array;
  /** Ranks per depth, and the least depth of any rank (moves by one: O(1) per change). */
  private depthCount = new Int32Array(16);
  private minDepth = 0;
  private readonly tally = new RegretTally();

  constructor(
    private readonly ranks: number,
    private readonly blockSize: number,
    private readonly timing: PrefillTiming,
  ) {
    this.depth = new Int32Array(ranks);
    this.depthCount[0] = ranks;
    for (let s = 0; s < ranks; s++) this.index.reserve(s);
  }

  /** An engine took a step (or an idle look): its events are its residency now. */
  stepped(rankId: number, events: readonly KvEvent[]): void {
    if (events.length > 0) this.index.applyAll(rankId, events);
  }

  /**
   * Judges a decision before the request joins its rank: the chosen rank's true overlap against
   * the best of any rank (busy or not), in blocks and in the engine's prefill time for the uncached
   * tokens, and its queue depth against the least one.
   */
  judge(rankId: number, seqHashes: ArrayLike<bigint>, promptTokens: number): void {
    const full = seqHashes.length;
    const q = this.index.beginOverlaps(seqHashes, full);
    const lower = this.index.hasLowerTiers();
    const chosen = q.device[rankId]! + (lower ? q.host[rankId]! + q.disk[rankId]! : 0);
    let best = q.deepest;
    // With host or disk blocks a shorter device prefix may continue further: every rank is read.
    if (lower) for (let s = 0; s < this.ranks; s++) best = Math.max(best, q.device[s]! + q.host[s]! + q.disk[s]!);
    this.index.endOverlaps();
    const bs = this.blockSize;
    const ms = best === chosen ? 0 : prefillTimeMs(uncachedTokens(promptTokens, chosen, bs), this.timing) - prefillTimeMs(uncachedTokens(promptTokens, best, bs), this.timing);
    this.tally.push(best - chosen, ms, this.depth[rankId]!, this.minDepth);
  }

  dispatched(rankId: number): void {
    const d = this.depth[rankId]!++;
    if (d + 1 >= this.depthCount.length) {
      const grown = new Int32Array(this.depthCount.length * 2);
      grown.set(this.depthCount);
      this.depthCount = grown;
    }
    this.depthCount[d]!--;
    this.depthCount[d + 1]!++;
    if (d === this.minDepth && this.depthCount[d] === 0) this.minDepth = d + 1;
  }

  completed(rankId: number): void {
    const d = this.depth[rankId]!--;
    this.depthCount[d]!--;
    this.depthCount[d - 1]!++;
    if (d - 1 < this.minDepth) this.minDepth = d - 1;
  }

  summary(): RegretSummary {
    return this.tally.summary(0, REPLAY_LOAD_UNIT);
  }
}
