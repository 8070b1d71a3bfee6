// Worker routers for an in-process caller (replay now, the frontend later): round-robin,
// random, and kv (index overlap + the router's own active-block count, SPEC §6.3).
import type { KvIndex } from "../index/kv-index.ts";
import type { Rng } from "../random/rng.ts";
import { kvCost } from "./kv-cost.ts";
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
  worker: number;
  cost: number;
  deviceOverlap: number;
  hostOverlap: number;
}

export interface Router {
  route(q: RouteQuery): RouteDecision;
  /** A routed request finished (or failed): its blocks leave the worker's decode load. */
  release(worker: number, promptBlocks: number): void;
}

export interface KvRouterOptions {
  prefillLoadScale: number;
  temperature: number;
  /** Skip workers whose active blocks exceed this share of their G1 while others are below. */
  busyThreshold?: number;
  blocksPerWorker: number;
}

export function createRouter(mode: RouterMode, numWorkers: number, rng: Rng, index?: KvIndex, kv?: KvRouterOptions): Router {
  switch (mode) {
    case RouterMode.roundRobin: {
      let next = 0;
      return {
        route: () => ({ worker: next++ % numWorkers, cost: 0, deviceOverlap: 0, hostOverlap: 0 }),
        release: () => {},
      };
    }
    case RouterMode.random:
      return { route: () => ({ worker: rng.int(numWorkers), cost: 0, deviceOverlap: 0, hostOverlap: 0 }), release: () => {} };
    case RouterMode.kv:
      if (!index || !kv) throw new RangeError("kv routing needs an index and its options");
      return new KvRouter(numWorkers, index, rng, kv);
  }
}

export class KvRouter implements Router {
  private readonly candidates: number[];
  private readonly activeBlocks: Float64Array;
  private readonly device: Int32Array;
  private readonly costs: Float64Array;
  private readonly footprints: Float64Array;
  private readonly pick: number[] = [];

  constructor(
    private readonly numWorkers: number,
    private readonly index: KvIndex,
    private readonly rng: Rng,
    private readonly opts: KvRouterOptions,
  ) {
    this.candidates = Array.from({ length: numWorkers }, (_, i) => i);
    this.activeBlocks = new Float64Array(numWorkers);
    this.device = new Int32Array(numWorkers);
    this.costs = new Float64Array(numWorkers);
    this.footprints = new Float64Array(numWorkers);
  }

  route(q: RouteQuery): RouteDecision {
    const n = this.numWorkers;
    const full = q.seqHashes.length;
    this.index.deviceOverlaps(q.seqHashes, full, this.candidates, this.device);
    const threshold = this.opts.busyThreshold;
    const pick = this.pick;
    pick.length = 0;
    if (threshold !== undefined) {
      const limit = threshold * this.opts.blocksPerWorker;
      for (let w = 0; w < n; w++) if (this.activeBlocks[w]! <= limit) pick.push(w);
    }
    if (pick.length === 0) for (let w = 0; w < n; w++) pick.push(w);
    const hostOverlaps = new Int32Array(pick.length);
    for (let i = 0; i < pick.length; i++) {
      const w = pick[i]!;
      const d = this.device[w]!;
      const h = this.index.hostContinuation(w, q.seqHashes, d, full);
      hostOverlaps[i] = h;
      this.costs[i] = kvCost(q.promptBlocks, d, h, this.activeBlocks[w]!, this.opts.prefillLoadScale);
      this.footprints[i] = this.index.footprint(w);
    }
    const i = selectByCost(this.costs, this.footprints, pick.length, this.rng, this.opts.temperature);
    const worker = pick[i]!;
    this.activeBlocks[worker]! += q.promptBlocks;
    return { worker, cost: this.costs[i]!, deviceOverlap: this.device[worker]!, hostOverlap: hostOverlaps[i]! };
  }

  release(worker: number, promptBlocks: number): void {
    this.activeBlocks[worker]! -= promptBlocks;
  }

  /** The router's decode-load view of a worker (tests). */
  activeBlocksOf(worker: number): number {
    return this.activeBlocks[worker]!;
  }
}
