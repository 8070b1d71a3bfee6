// The one worker router (SPEC §6.3), used by the frontend and by `replay`: round-robin, random,
// and kv (index overlap per tier + the router's own active-block count). Candidates are
// (worker, dp rank) pairs named by a numeric source id the caller assigns (the same id its
// KvIndex is fed under); they come and go at run time (workers register and vanish).
import type { KvIndex } from "../index/kv-index.ts";
import type { Rng } from "../random/rng.ts";
import { DISK_OVERLAP_WEIGHT, HOST_OVERLAP_WEIGHT, kvCost, type TierWeights } from "./kv-cost.ts";
import { selectByCost } from "./worker-selection.ts";

export const RouterMode = { roundRobin: "round-robin", random: "random", kv: "kv" } as const;
export type RouterMode = (typeof RouterMode)[keyof typeof RouterMode];

export interface RouteQuery {
  /** Full-block sequence hashes of the prompt at the workers' block size. */
  seqHashes: ArrayLike<bigint>;
  /** ceil(prompt tokens / block size). */
  promptBlocks: number;
}

export interface RouteDecision {
  /** The chosen candidate's source id. */
  source: number;
  cost: number;
  deviceOverlap: number;
  hostOverlap: number;
  diskOverlap: number;
}

export interface RouterOptions {
  mode: RouterMode;
  /** kv: weight of prefill blocks against decode blocks (prefill_load_scale; default 1). */
  prefillLoadScale?: number;
  /** kv: a host / disk block's share of a device block (defaults 0.75 / 0.25, as Dynamo). */
  hostWeight?: number;
  diskWeight?: number;
  /** kv: 0 = lowest cost; > 0 samples a softmax over normalised costs. */
  temperature?: number;
  /** kv: skip candidates whose active blocks exceed this share of their capacity while others are below. */
  busyThreshold?: number;
}

export class Router {
  readonly mode: RouterMode;
  private readonly prefillLoadScale: number;
  private readonly weights: TierWeights;
  private readonly temperature: number;
  private readonly busyThreshold: number | undefined;
  // Dense candidate arrays (a removal moves the last candidate into the hole).
  private readonly sources: number[] = [];
  private readonly capacity: number[] = [];
  /** Active blocks per slot (typed: read once per candidate per decision). */
  private active = new Float64Array(16);
  private readonly slotOf = new Map<number, number>();
  private next = 0;
  // Per-decision scratch, grown with the candidate count.
  private device = new Int32Array(16);
  private costs = new Float64Array(16);
  private footprints = new Float64Array(16);
  private host = new Int32Array(16);
  private disk = new Int32Array(16);
  private readonly pick: number[] = [];
  private readonly pickSources: number[] = [];
  /** routeKv's chosen slot (a field, not a returned tuple: no allocation per decision). */
  private chosenSlot = 0;

  constructor(
    opts: RouterOptions,
    private readonly rng: Rng,
    private readonly index?: KvIndex,
  ) {
    if (opts.mode === RouterMode.kv && !index) throw new RangeError("kv routing needs an index");
    this.mode = opts.mode;
    this.prefillLoadScale = opts.prefillLoadScale ?? 1;
    this.weights = { host: opts.hostWeight ?? HOST_OVERLAP_WEIGHT, disk: opts.diskWeight ?? DISK_OVERLAP_WEIGHT };
    this.temperature = opts.temperature ?? 0;
    this.busyThreshold = opts.busyThreshold;
  }

  /** Candidates, in no particular order. */
  get candidates(): readonly number[] {
    return this.sources;
  }

  get size(): number {
    return this.sources.length;
  }

  has(source: number): boolean {
    return this.slotOf.has(source);
  }

  /** Adds a candidate with its G1 capacity in blocks (for the busy threshold). Idempotent. */
  add(source: number, capacityBlocks: number): void {
    const slot = this.slotOf.get(source);
    if (slot !== undefined) {
      this.capacity[slot] = capacityBlocks;
      return;
    }
    this.slotOf.set(source, this.sources.length);
    this.sources.push(source);
    this.capacity.push(capacityBlocks);
    if (this.device.length < this.sources.length) {
      const n = this.sources.length * 2;
      const active = new Float64Array(n);
      active.set(this.active);
      this.active = active;
      this.device = new Int32Array(n);
      this.costs = new Float64Array(n);
      this.footprints = new Float64Array(n);
      this.host = new Int32Array(n);
      this.disk = new Int32Array(n);
    }
  }

  /** Takes a candidate out of routing at once; its active-block count is forgotten. */
  remove(source: number): void {
    const slot = this.slotOf.get(source);
    if (slot === undefined) return;
    this.slotOf.delete(source);
    const last = this.sources.length - 1;
    if (slot !== last) {
      this.sources[slot] = this.sources[last]!;
      this.capacity[slot] = this.capacity[last]!;
      this.active[slot] = this.active[last]!;
      this.slotOf.set(this.sources[slot]!, slot);
    }
    this.sources.pop();
    this.capacity.pop();
    this.active[last] = 0;
  }

  /** Picks a candidate and counts the prompt's blocks as its active load; undefined with none. */
  route(q: RouteQuery): RouteDecision | undefined {
    const n = this.sources.length;
    if (n === 0) return undefined;
    let slot: number;
    let decision: RouteDecision;
    switch (this.mode) {
      case RouterMode.roundRobin:
        slot = this.next++ % n;
        if (this.next >= n) this.next = 0;
        decision = { source: this.sources[slot]!, cost: 0, deviceOverlap: 0, hostOverlap: 0, diskOverlap: 0 };
        break;
      case RouterMode.random:
        slot = this.rng.int(n);
        decision = { source: this.sources[slot]!, cost: 0, deviceOverlap: 0, hostOverlap: 0, diskOverlap: 0 };
        break;
      case RouterMode.kv:
        decision = this.routeKv(q);
        slot = this.chosenSlot;
        break;
    }
    this.active[slot] = this.active[slot]! + q.promptBlocks;
    return decision;
  }

  /** A routed request finished (or failed): its blocks leave the candidate's decode load. */
  release(source: number, promptBlocks: number): void {
    const slot = this.slotOf.get(source);
    if (slot !== undefined) this.active[slot] = Math.max(0, this.active[slot]! - promptBlocks);
  }

  /** The router's decode-load view of a candidate (metrics, tests). */
  activeBlocksOf(source: number): number {
    const slot = this.slotOf.get(source);
    return slot === undefined ? 0 : this.active[slot]!;
  }

  private routeKv(q: RouteQuery): RouteDecision {
    const index = this.index!;
    const n = this.sources.length;
    const full = q.seqHashes.length;
    // Candidates below the busy threshold; all of them when there is none or nobody is below it.
    let pick: number[] | undefined;
    let pickSources: readonly number[] = this.sources;
    const threshold = this.busyThreshold;
    if (threshold !== undefined) {
      pick = this.pick;
      const ps = this.pickSources;
      pick.length = 0;
      ps.length = 0;
      for (let s = 0; s < n; s++) {
        if (this.active[s]! <= threshold * this.capacity[s]!) {
          pick.push(s);
          ps.push(this.sources[s]!);
        }
      }
      if (pick.length === 0) pick = undefined;
      else pickSources = ps;
    }
    const m = pickSources.length;
    const device = this.device;
    const host = this.host;
    const disk = this.disk;
    const costs = this.costs;
    const active = this.active;
    const scale = this.prefillLoadScale;
    const pb = q.promptBlocks;
    const wHost = this.weights.host;
    const wDisk = this.weights.disk;
    const fp = index.deviceFootprints();
    const fpLen = fp.length;
    if (this.temperature > 0) {
      index.overlaps(q.seqHashes, full, pickSources, device, host, disk);
      for (let c = 0; c < m; c++) {
        const slot = pick === undefined ? c : pick[c]!;
        costs[c] = kvCost(pb, device[c]!, host[c]!, active[slot]!, scale, disk[c]!, this.weights);
      }
      const i = selectByCost(costs, this.footprints, m, this.rng, this.temperature);
      this.chosenSlot = pick === undefined ? i : pick[i]!;
      return { source: pickSources[i]!, cost: costs[i]!, deviceOverlap: device[i]!, hostOverlap: host[i]!, diskOverlap: disk[i]! };
    }
    // selectByCost at temperature 0, fused with the overlap, cost and footprint reads (one pass
    // over the candidates, overlaps read by source id, no per-candidate arrays): the same order,
    // comparisons and RNG draws, so the same decisions.
    const ov = index.beginOverlaps(q.seqHashes, full);
    const od = ov.device;
    const oh = ov.host;
    const ok = ov.disk;
    const size = od.length;
    let best = -1;
    let bestCost = 0;
    let bestFp = 0;
    let ties = 0;
    for (let c = 0; c < m; c++) {
      const src = pickSources[c]!;
      let d = 0;
      let h = 0;
      let k = 0;
      if (src < size) {
        d = od[src]!;
        h = oh[src]!;
        k = ok[src]!;
      }
      // kvCost (kv-cost.ts), inlined.
      const cost = scale * Math.max(0, pb - d - wHost * h - wDisk * k) + active[pick === undefined ? c : pick[c]!]!;
      const f = src < fpLen ? fp[src]! : 0;
      if (best === -1 || cost < bestCost || (cost === bestCost && f < bestFp)) {
        best = c;
        bestCost = cost;
        bestFp = f;
        ties = 1;
      } else if (cost === bestCost && f === bestFp) {
        ties++;
        if (this.rng.int(ties) === 0) best = c;
      }
    }
    const src = pickSources[best]!;
    const decision: RouteDecision =
      src < size
        ? { source: src, cost: bestCost, deviceOverlap: od[src]!, hostOverlap: oh[src]!, diskOverlap: ok[src]! }
        : { source: src, cost: bestCost, deviceOverlap: 0, hostOverlap: 0, diskOverlap: 0 };
    index.endOverlaps();
    this.chosenSlot = pick === undefined ? best : pick[best]!;
    return decision;
  }
}
