// The one worker router, used by the frontend and by `replay`: round-robin, random, and kv
// (Dynamo's KV router: index overlap per tier against the router's own load model, see
// kv-cost.ts and active-load.ts). Candidates are (worker, dp rank) pairs named by a numeric
// rank id the caller assigns (the same id its KvIndex is fed under); they come and go at run
// time. Every mode keeps the same load tracker and busy thresholds, so figures compare.
// oracle (replay only) is kv on the oracle view: the caller gives it an index of the engines' own state
// at decision time (docs/DECISIONS.md "Regret and oracle"): the bound the other modes are compared to.
import type { RouterMode } from "../../protocol/router-modes.ts";
import type { KvIndex } from "../index/kv-index.ts";
import type { Walk } from "../index/prefix-walk.ts";
import { RankSet } from "../index/tier-index.ts";
import type { Rng } from "../random/rng.ts";
import { ActiveLoad, type ActiveRequest } from "./active-load.ts";
import { ApproximateIndex } from "./approximate-index.ts";
import { DISK_OVERLAP_WEIGHT, HOST_OVERLAP_WEIGHT, prefillBlocks, uncachedPromptTokens, type CostWeights } from "./kv-cost.ts";
import { type BusyThresholds, type CandidateInfo, OVERLOADED, type RouteDecision, type RouteQuery, type RouterOptions } from "./router-options.ts";
import { selectByCost } from "./worker-selection.ts";


export class Router {
  readonly mode: RouterMode;
  /** Requests shed because every worker was busy. */
  rejected = 0;
  private readonly weights: CostWeights;
  private readonly temperature: number;
  private readonly busy: Required<{ [K in keyof BusyThresholds]: number }>;
  private readonly busyOn: boolean;
  private readonly load = new ActiveLoad();
  private readonly approx: ApproximateIndex | undefined;
  private readonly queueThreshold: number | undefined;
  // Dense candidate arrays, by position (a removal moves the last candidate into the hole).
  private readonly rankIds: number[] = [];
  private readonly capacity: number[] = [];
  private readonly workerOf: number[] = [];
  private readonly batchedTokens: number[] = [];
  private readonly positionOf = new Map<number, number>();
  /** The candidates' rank ids as a set with its fingerprint (the walks' cover). */
  private readonly cover = new RankSet();
  private next = 0;
  // Per-decision scratch.
  private costs = new Float64Array(16);
  private readonly pick: number[] = [];
  private freeRanks = new Int32Array(16);
  private seenStamp = new Int32Array(16);
  private stamp = 0;
  /** The chosen candidate's overlaps and the active-load walk they came from (selectKv → commit, no allocation). */
  private readonly chosen: { device: number; host: number; disk: number; activePrefix: number; walk: Walk | undefined } = { device: 0, host: 0, disk: 0, activePrefix: 0, walk: undefined };
  /** kv and oracle: the decision reads the index (the other modes price nothing). */
  private readonly priced: boolean;
  /** false: Dynamo's prefill router, which counts no active blocks (RouterOptions.trackActiveBlocks). */
  private readonly trackBlocks: boolean;

  constructor(
    opts: RouterOptions,
    private readonly rng: Rng,
    private readonly index?: KvIndex,
  ) {
    if (opts.mode === "kv" && !index) throw new RangeError("kv routing needs an index");
    if (opts.mode === "oracle" && !index) throw new RangeError("oracle routing needs the engines' true residency as its index (replay only)");
    this.mode = opts.mode;
    this.priced = opts.mode === "kv" || opts.mode === "oracle";
    this.trackBlocks = opts.trackActiveBlocks ?? true;
    this.weights = {
      prefillLoadScale: opts.prefillLoadScale ?? 1,
      overlapCredit: opts.overlapScoreCredit ?? 1,
      host: opts.hostWeight ?? HOST_OVERLAP_WEIGHT,
      disk: opts.diskWeight ?? DISK_OVERLAP_WEIGHT,
    };
    this.temperature = opts.temperature ?? 0;
    const b = opts.busy ?? {};
    this.busy = { activeDecodeBlocks: b.activeDecodeBlocks ?? Infinity, activePrefillTokens: b.activePrefillTokens ?? Infinity, activePrefillTokensFrac: b.activePrefillTokensFrac ?? Infinity };
    this.busyOn = b.activeDecodeBlocks !== undefined || b.activePrefillTokens !== undefined || b.activePrefillTokensFrac !== undefined;
    this.queueThreshold = opts.queueThreshold;
    this.approx = opts.mode === "kv" && opts.approximateTtlMs !== undefined && index ? new ApproximateIndex(index, opts.approximateTtlMs) : undefined;
  }

  /** Candidates, in no particular order. */
  get candidates(): readonly number[] {
    return this.rankIds;
  }

  get size(): number {
    return this.rankIds.length;
  }

  has(rankId: number): boolean {
    return this.positionOf.has(rankId);
  }

  /** Adds a candidate (or updates its figures). */
  add(rankId: number, c: CandidateInfo): void {
    if (c.worker >= this.freeRanks.length) {
      const size = Math.max(c.worker + 1, this.freeRanks.length * 2);
      this.freeRanks = new Int32Array(size);
      this.seenStamp = new Int32Array(size);
    }
    this.index?.reserve(rankId);
    this.load.reserve(rankId);
    let pos = this.positionOf.get(rankId);
    if (pos === undefined) {
      pos = this.rankIds.length;
      this.positionOf.set(rankId, pos);
      this.rankIds.push(rankId);
      this.cover.add(rankId);
      if (this.costs.length < this.rankIds.length) this.costs = new Float64Array(this.rankIds.length * 2);
    }
    this.capacity[pos] = c.capacityBlocks;
    this.workerOf[pos] = c.worker;
    this.batchedTokens[pos] = c.maxNumBatchedTokens ?? 0;
  }

  /** Takes a candidate out of routing at once (its requests' load leaves as they finish). */
  remove(rankId: number): void {
    const pos = this.positionOf.get(rankId);
    if (pos === undefined) return;
    this.positionOf.delete(rankId);
    this.cover.delete(rankId);
    const last = this.rankIds.length - 1;
    if (pos !== last) {
      this.rankIds[pos] = this.rankIds[last]!;
      this.capacity[pos] = this.capacity[last]!;
      this.workerOf[pos] = this.workerOf[last]!;
      this.batchedTokens[pos] = this.batchedTokens[last]!;
      this.positionOf.set(this.rankIds[pos]!, pos);
    }
    this.rankIds.pop();
    this.capacity.pop();
    this.workerOf.pop();
    this.batchedTokens.pop();
    this.approx?.dropRank(rankId);
  }

  /**
   * Picks a candidate and counts the request as its load; undefined with no candidates,
   * OVERLOADED when every worker is busy.
   */
  route(q: RouteQuery): RouteDecision | typeof OVERLOADED | undefined {
    const n = this.rankIds.length;
    if (n === 0) return undefined;
    this.approx?.expire(q.nowMs ?? 0);
    let pick: number[] | undefined;
    if (this.busyOn) {
      pick = this.idleCandidates();
      if (pick.length === 0) {
        this.rejected++;
        return OVERLOADED;
      }
    }
    if (q.exclude !== undefined && q.exclude.size > 0) {
      pick = this.without(pick, q.exclude);
      if (pick.length === 0) return undefined;
    }
    const m = pick === undefined ? n : pick.length;
    let c: number;
    switch (this.mode) {
      case "round-robin":
        c = this.next++ % m;
        if (this.next >= n) this.next = 0;
        break;
      case "random":
        c = this.rng.int(m);
        break;
      case "kv":
      case "oracle":
        c = this.selectKv(q, pick, m);
        break;
      default:
        // A mode added to protocol/router-modes.ts is a compile error here until it is handled.
        return unhandledMode(this.mode);
    }
    return this.commit(q, pick === undefined ? c : pick[c]!);
  }

  /** Counts a request another router sent to the candidate (router replica sync) as its load, until finish(). */
  track(rankId: number, hashes: ArrayLike<bigint>, prefillTokens: number): ActiveRequest {
    return this.load.add(rankId, hashes, prefillTokens);
  }

  /** The request's first token arrived: its prefill leaves the candidate's outstanding prefill. */
  firstToken(req: ActiveRequest): void {
    this.load.firstToken(req);
  }

  /** The request ended any way (finished, failed, cancelled): all of its load is released. */
  finish(req: ActiveRequest): void {
    this.load.finish(req);
  }

  /** Distinct blocks of the candidate's in-flight prompts. */
  activeBlocksOf(rankId: number): number {
    return this.load.activeBlocks(rankId);
  }

  activePrefillTokensOf(rankId: number): number {
    return this.load.activePrefillTokens(rankId);
  }

  /**
   * Whether a request should wait instead of being routed now: a queue threshold is set and every
   * candidate's outstanding prefill is above it (a candidate that advertises no
   * max_num_batched_tokens is never full). False without candidates (routing then fails instead).
   */
  saturated(): boolean {
    const f = this.queueThreshold;
    const n = this.rankIds.length;
    if (f === undefined || n === 0) return false;
    for (let pos = 0; pos < n; pos++) {
      const budget = this.batchedTokens[pos]!;
      if (budget === 0 || this.load.activePrefillTokens(this.rankIds[pos]!) <= f * budget) return false;
    }
    return true;
  }

  /** Whether the candidate's rank is over a busy threshold now. */
  isBusy(rankId: number): boolean {
    const pos = this.positionOf.get(rankId);
    return pos !== undefined && this.busyAt(pos);
  }

  private busyAt(pos: number): boolean {
    const s = this.rankIds[pos]!;
    const b = this.busy;
    const prefill = this.load.activePrefillTokens(s);
    return (
      this.load.activeBlocks(s) / this.capacity[pos]! > b.activeDecodeBlocks ||
      prefill > b.activePrefillTokens ||
      (this.batchedTokens[pos]! > 0 && prefill > b.activePrefillTokensFrac * this.batchedTokens[pos]!)
    );
  }

  /** The positions of `pick` (every position when undefined) whose rank id is not in `exclude`, in this.pick. */
  private without(pick: number[] | undefined, exclude: ReadonlySet<number>): number[] {
    const out = this.pick;
    if (pick === undefined) {
      out.length = 0;
      for (let pos = 0; pos < this.rankIds.length; pos++) if (!exclude.has(this.rankIds[pos]!)) out.push(pos);
      return out;
    }
    let kept = 0;
    for (const pos of pick) if (!exclude.has(this.rankIds[pos]!)) out[kept++] = pos;
    out.length = kept;
    return out;
  }

  /** Positions of the candidates whose worker has at least one rank under every threshold. */
  private idleCandidates(): number[] {
    const n = this.rankIds.length;
    const pick = this.pick;
    pick.length = 0;
    const stamp = (this.stamp = (this.stamp + 1) & 0x7fffffff || 1);
    const free = this.freeRanks;
    const seen = this.seenStamp;
    for (let pos = 0; pos < n; pos++) {
      const w = this.workerOf[pos]!;
      if (seen[w] !== stamp) {
        seen[w] = stamp;
        free[w] = 0;
      }
      if (!this.busyAt(pos)) free[w]!++;
    }
    for (let pos = 0; pos < n; pos++) if (free[this.workerOf[pos]!]! > 0) pick.push(pos);
    return pick;
  }

  /**
   * The lowest-cost candidate (index into pick, or the position when all are candidates): one walk of
   * the prompt's blocks in the index and in the active-block tracker serves every candidate.
   * Exact ties go uniformly at random, as Dynamo.
   */
  private selectKv(q: RouteQuery, pick: number[] | undefined, m: number): number {
    const full = q.seqHashes.length;
    // Every candidate's id is within these arrays (add() reserved it): no range checks below.
    // Depths below a walk's floor read as the floor (the candidates all share that prefix).
    const ov = this.index!.beginOverlaps(q.seqHashes, full, this.cover);
    const od = ov.device;
    const oh = ov.host;
    const ok = ov.disk;
    const odFloor = ov.floor;
    const prefixes = this.load.beginPrefixes(q.seqHashes, full, this.cover);
    const act = prefixes.device;
    const actFloor = prefixes.floor;
    const ab = this.load.activeBlocksByRank();
    const pf = this.load.prefillByRank();
    const { prefillLoadScale: scale, host: wHost, disk: wDisk } = this.weights;
    const cw = q.overlapCredit ?? this.weights.overlapCredit;
    const isl = q.promptTokens;
    const bs = q.blockSize;
    const costs = this.costs;
    const rankIds = this.rankIds;
    // Host and disk overlaps are read only when something is indexed there (the common device-only case reads less).
    const lower = this.index!.hasLowerTiers();
    // kvCost (kv-cost.ts), inlined: this runs once per candidate per request. The common case
    // (every candidate, device only, lowest cost) picks in the same loop, without the
    // per-candidate branches or a cost array; it draws ties as selectByCost does.
    let best: number;
    if (pick === undefined && !lower && this.temperature === 0) {
      const rng = this.rng;
      let bestCost = Infinity;
      let ties = 0;
      best = -1;
      for (let c = 0; c < m; c++) {
        const rankId = rankIds[c]!;
        const d = od[rankId]!;
        const a = act[rankId]!;
        const prefill = (pf[rankId]! + isl) / bs - cw * (d > odFloor ? d : odFloor);
        const cost = scale * (prefill > 0 ? prefill : 0) + ab[rankId]! + (full - (a > actFloor ? a : actFloor));
        if (cost < bestCost) {
          best = c;
          bestCost = cost;
          ties = 1;
        } else if (cost === bestCost && rng.int(++ties) === 0) best = c;
      }
    } else {
      for (let c = 0; c < m; c++) {
        const rankId = rankIds[pick === undefined ? c : pick[c]!]!;
        const d = Math.max(od[rankId]!, odFloor);
        const credit = lower ? cw * d + wHost * oh[rankId]! + wDisk * ok[rankId]! : cw * d;
        const prefill = (pf[rankId]! + isl) / bs - credit;
        costs[c] = scale * (prefill > 0 ? prefill : 0) + ab[rankId]! + (full - Math.max(act[rankId]!, actFloor));
      }
      // Lowest cost with exact ties uniformly at random, or sampled by temperature (worker-selection.ts).
      best = selectByCost(costs, m, this.rng, this.temperature);
    }
    // The chosen candidate's overlaps, read before the walks end (commit() counts the request).
    const rankId = rankIds[pick === undefined ? best : pick[best]!]!;
    const chosen = this.chosen;
    chosen.device = Math.max(od[rankId]!, odFloor);
    chosen.host = oh[rankId]!;
    chosen.disk = ok[rankId]!;
    chosen.activePrefix = Math.max(act[rankId]!, actFloor);
    chosen.walk = prefixes;
    this.load.endPrefixes();
    this.index!.endOverlaps();
    return best;
  }

  /** Counts the request on the candidate at `pos` and describes the decision. */
  private commit(q: RouteQuery, pos: number): RouteDecision {
    const rankId = this.rankIds[pos]!;
    const full = q.seqHashes.length;
    const chosen = this.chosen;
    if (!this.priced) {
      // No index is consulted: the whole prompt counts as prefill; the active prefix still
      // gives the decode term (decision logs and metrics compare across modes).
      chosen.device = chosen.host = chosen.disk = 0;
      const walk = this.load.beginPrefixes(q.seqHashes, full);
      chosen.activePrefix = rankId < walk.device.length ? walk.device[rankId]! : 0;
      chosen.walk = walk;
      this.load.endPrefixes();
    }
    const { device, host, disk, activePrefix } = chosen;
    const w = q.overlapCredit === undefined ? this.weights : { ...this.weights, overlapCredit: q.overlapCredit };
    const activeBlocks = this.load.activeBlocks(rankId);
    const activePrefillTokens = this.load.activePrefillTokens(rankId);
    const newBlocks = full - activePrefix;
    const prefill = prefillBlocks({ promptTokens: q.promptTokens, blockSize: q.blockSize, device, host, disk, activeBlocks, activePrefillTokens, newBlocks }, w);
    const prefillTokens = q.trackPrefillTokens === false ? 0 : uncachedPromptTokens(q.promptTokens, q.blockSize, device, host, disk, w);
    const request = this.trackBlocks ? this.load.addWalked(rankId, chosen.walk!, activePrefix, prefillTokens) : this.load.addPrefillOnly(rankId, prefillTokens);
    chosen.walk = undefined;
    this.approx?.record(rankId, q.seqHashes, q.nowMs ?? 0);
    return {
      rankId,
      cost: prefill + activeBlocks + newBlocks,
      deviceOverlap: device,
      hostOverlap: host,
      diskOverlap: disk,
      prefillBlocks: prefill,
      activeBlocks,
      newBlocks,
      activePrefillTokens,
      request,
    };
  }
}

function unhandledMode(mode: never): never {
  throw new RangeError(`router mode ${String(mode)} is not handled`);
}
