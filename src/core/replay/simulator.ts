// Offline replay (`kvcr-mock replay`): N engines on one discrete-event virtual clock, requests
// routed by an in-process router (the kv router reads an index fed by the engines' own events). A
// worker steps back to back while it has work; its step's tokens, finishes and events take effect
// at the step's end. No sockets, no wall clock: the same inputs give the same run. Every decision
// is judged against the engines' true state (the oracle view, oracle-view.ts, when regret is on), which the oracle
// mode routes on.
import { KvIndex } from "../index/kv-index.ts";
import type { BlockHashes, BlockHasher } from "../kv/block-hash.ts";
import type { EngineConfig } from "../engine/engine-config.ts";
import type { EngineMetrics, StepResult } from "../engine/engine-types.ts";
import { MockEngine, type EngineDeps } from "../engine/mock-engine.ts";
import { createRng } from "../random/rng.ts";
import type { ActiveRequest } from "../routing/active-load.ts";
import type { RouterMode } from "../../protocol/router-modes.ts";
import { Router } from "../routing/router.ts";
import { OVERLOADED, type RouterOptions } from "../routing/router-options.ts";
import { arrivalTimesMs, firstArrivals, type ArrivalSpec } from "../workload/arrivals.ts";
import type { WorkloadRequest } from "../workload/workload.ts";
import type { RegretSummary } from "../routing/regret.ts";
import { EventHeap } from "./event-heap.ts";
import { OracleView } from "./oracle-view.ts";
import { isSessionWorkload, SessionRun } from "./session-run.ts";
import { loraExclusions } from "./lora-routing.ts";
import type { Sensitivity } from "./sensitivity.ts";

export interface SimulationOptions {
  engine: Partial<EngineConfig>;
  numWorkers: number;
  /** Data-parallel ranks per worker (default 1): each (worker, rank) is its own engine and routing candidate. */
  dataParallelSize?: number;
  routerMode: RouterMode;
  /** The router's tuning, as the frontend takes it (defaults when absent). */
  router?: Omit<RouterOptions, "mode">;
  arrival: ArrivalSpec;
  /** Seeds random routing and Poisson arrivals (engines take engine.seed). */
  seed: number;
  /**
   * Judge every decision against the engines' true state (default true). Keeping that state is a
   * second index fed every KV event: off, a replay outside oracle mode runs faster.
   */
  regret?: boolean;
  /** Session workloads: at most this many sessions open at once (docs/sessions.md). */
  maxSessions?: number;
  /** Called as requests complete (about every 1%), e.g. for a progress bar. */
  onProgress?: (done: number, total: number) => void;
  /**
   * Workers holding each LoRA adapter the workload names (rendezvous placement on this many; absent:
   * every worker holds every adapter). Requests for an adapter go only to its holders.
   */
  loraReplicas?: number;
  /** Tracks how request times move with a parametric profile's costs (calibrate's fit); sized for this workload and its engines. */
  sensitivity?: Sensitivity;
  /** Each request's (worker × dp + rank) as a measured run served it: the router is not asked. */
  servedBy?: Int32Array;
}

export interface SimulationResult {
  readonly numRequests: number;
  readonly worker: Int32Array;
  readonly dpRank: Int32Array;
  readonly arrivalMs: Float64Array;
  /** NaN when the request produced no token. */
  readonly firstTokenMs: Float64Array;
  readonly lastTokenMs: Float64Array;
  readonly outputTokens: Int32Array;
  readonly promptTokens: Int32Array;
  readonly cachedTokens: Int32Array;
  readonly hostLoadedTokens: Int32Array;
  /** Failure reason per request index (absent = ok). */
  readonly errors: Map<number, string>;
  /** Requests shed because every worker was busy (counted in errors too). */
  readonly rejected: number;
  /** Requests the router held back while every worker was saturated (a queue threshold). */
  readonly queued: number;
  /** Every inter-token gap of every request (ms); buildReport reorders it in place. */
  readonly itlMs: Float64Array;
  /** Virtual time when the last event happened. */
  readonly simulatedMs: number;
  readonly requestsPerWorker: number[];
  /** Requests per worker, per data-parallel rank. */
  readonly requestsPerRank: number[][];
  readonly engines: EngineMetrics[];
  /** Every routed request's cache and load regret against the oracle view at its decision (exact); absent with regret off. */
  readonly regret?: RegretSummary;
}

const STEP_END = 0;
const WAKE = 1;

export function simulate(workload: readonly WorkloadRequest[], opts: SimulationOptions, deps: EngineDeps): SimulationResult {
  const n = workload.length;
  const workers = opts.numWorkers;
  const dp = opts.dataParallelSize ?? 1;
  // One engine per (worker, rank): rank id = worker × dp + rank, as routing candidate and in the index.
  const W = workers * dp;
  // The virtual clock runs at model speed: a wall-clock speedup has no meaning offline.
  const engineCfg = { ...opts.engine, speedupRatio: 1 };
  const engines = Array.from({ length: W }, () => new MockEngine(engineCfg, deps));
  const blockSize = engines[0]!.config.blockSize;
  const rng = createRng(opts.seed);
  const kvMode = opts.routerMode === "kv";
  const oracle = opts.routerMode === "oracle";
  const oracleView = oracle || opts.regret === true ? new OracleView(W, blockSize, engines[0]!.config) : undefined;
  const judged = opts.regret === true;
  const index = kvMode ? new KvIndex() : oracle ? oracleView!.index : undefined;
  const router = new Router({ ...opts.router, mode: opts.routerMode }, rng, index);
  // Without KV events the router predicts the index from its own decisions: engine events are not
  // fed. The oracle routes on the oracle view's index, fed as each step is taken.
  const eventIndex = kvMode && opts.router?.approximateTtlMs === undefined ? index : undefined;
  const loraExcluded = loraExclusions(workload, workers, dp, opts.loraReplicas, deps.hasher);
  for (let s = 0; s < W; s++) {
    const c = engines[s]!.config;
    router.add(s, { capacityBlocks: c.numGpuBlocks, worker: s - (s % dp), maxNumBatchedTokens: c.maxNumBatchedTokens });
  }

  const worker = new Int32Array(n).fill(-1);
  const arrivalMs = new Float64Array(n);
  const firstTokenMs = new Float64Array(n).fill(NaN);
  const lastTokenMs = new Float64Array(n).fill(NaN);
  const outputTokens = new Int32Array(n);
  const promptTokens = new Int32Array(n);
  const cachedTokens = new Int32Array(n);
  const hostLoadedTokens = new Int32Array(n);
  const active: (ActiveRequest | undefined)[] = new Array(n);
  const errors = new Map<number, string>();
  let rejected = 0;
  const requestsPerRank = Array.from({ length: workers }, () => new Array<number>(dp).fill(0));
  const buffers = new TokenBufferPool();
  const bufferOf: (Uint32Array | undefined)[] = new Array(n);
  // At most one gap per output token: sized once instead of grown (millions on a full trace).
  let maxGaps = 0;
  for (const r of workload) maxGaps += r.outputLength;
  let itl = new Float64Array(Math.max(16, maxGaps));
  let itlLen = 0;

  // Arrivals as a time-ordered FIFO: the whole schedule up front, or fed by completions.
  let arrHead = 0;
  // Session turns are due as their sessions say (a turn after its predecessor finished), not by a schedule.
  const sessions = isSessionWorkload(workload) ? new SessionRun(workload, opts.arrival, rng, opts.maxSessions) : undefined;
  const times = sessions ? undefined : arrivalTimesMs(workload, opts.arrival, rng);
  const first = firstArrivals(n, times, opts.arrival, sessions ? n : 0);
  const { time: arrT, index: arrI } = first;
  let nextClosed = first.nextClosed;

  const heap = new EventHeap();
  const busy = new Uint8Array(W);
  const pending: (StepResult | undefined)[] = new Array(W);
  let done = 0;
  const progressEvery = Math.max(1, Math.floor(n / 100));
  let now = 0;
  const sens = opts.sensitivity;

  const complete = (i: number, t: number) => {
    if (sessions) {
      const tokens = bufferOf[i]?.subarray(0, promptTokens[i]! + outputTokens[i]!);
      for (const c of sessions.finished(i, t, !errors.has(i), tokens)) {
        errors.set(c.index, c.reason);
        done++;
      }
    }
    // The engine is done with the request's tokens and its events were consumed: reuse them.
    if (bufferOf[i] !== undefined) buffers.release(bufferOf[i]!);
    bufferOf[i] = undefined;
    const req = active[i];
    if (req !== undefined) {
      router.finish(req);
      oracleView?.completed(worker[i]!);
    }
    active[i] = undefined;
    done++;
    if (opts.onProgress && (done % progressEvery === 0 || done === n)) opts.onProgress(done, n);
    if (times === undefined && nextClosed < n) {
      sens?.sent(nextClosed);
      arrT.push(t);
      arrI.push(nextClosed++);
    }
  };

  const startStep = (w: number, t: number, onArrival = false) => {
    const res = engines[w]!.step(t);
    oracleView?.stepped(w, res.events);
    if (res.scheduledRequests > 0) {
      sens?.stepStarted(w, engines[w]!.lastStepShape, onArrival, t, res.durationMs);
      busy[w] = 1;
      pending[w] = res;
      heap.push(t + res.durationMs, w * 2 + STEP_END);
      return;
    }
    busy[w] = 0;
    if (eventIndex !== undefined && res.events.length > 0) eventIndex.applyAll(w, res.events);
    const wake = engines[w]!.nextWakeMs();
    if (wake !== undefined) heap.push(Math.max(wake, t), w * 2 + WAKE);
  };

  const stepDone = (w: number, t: number) => {
    const res = pending[w]!;
    pending[w] = undefined;
    if (eventIndex !== undefined && res.events.length > 0) eventIndex.applyAll(w, res.events);
    const tokens = res.tokens;
    for (let k = 0; k < tokens.length; k++) {
      const i = Number(tokens[k]!.requestId);
      const last = lastTokenMs[i]!;
      sens?.token(i, last !== last);
      if (last !== last) {
        // NaN: the first token, which ends the request's outstanding prefill in the router's view.
        firstTokenMs[i] = t;
        if (active[i] !== undefined) router.firstToken(active[i]);
      } else {
        if (itlLen === itl.length) {
          const grown = new Float64Array(itl.length * 2);
          grown.set(itl);
          itl = grown;
        }
        itl[itlLen++] = t - last;
      }
      lastTokenMs[i] = t;
      outputTokens[i]!++;
    }
    for (const f of res.finished) {
      const i = Number(f.requestId);
      cachedTokens[i] = f.cachedTokens;
      hostLoadedTokens[i] = f.hostLoadedTokens;
      complete(i, t);
    }
    if (heldHead < held.length) release(t);
    startStep(w, t);
  };

  // Requests the router holds while every worker is saturated (a queue threshold), in arrival order.
  const held: number[] = [];
  let heldHead = 0;
  const hashesOf: (BlockHashes | undefined)[] = new Array(n);
  let queued = 0;

  const arrive = (i: number, t: number) => {
    const req = workload[i]!;
    arrivalMs[i] = t;
    sens?.arrived(i);
    // One buffer for prompt and output, adopted by the engine (no copy of ~12k-token prompts).
    const inputLength = sessions ? sessions.promptLength(i) : req.inputLength;
    const buffer = buffers.acquire(inputLength + req.outputLength);
    bufferOf[i] = buffer;
    if (sessions) sessions.writePrompt(i, buffer);
    else req.writeTokens(buffer);
    const tokens = buffer.subarray(0, inputLength);
    promptTokens[i] = tokens.length;
    hashesOf[i] = req.loraName === undefined ? deps.hasher.hashBlocks(tokens, blockSize) : deps.hasher.hashBlocks(tokens, blockSize, undefined, deps.hasher.seedOf(req.loraName));
    if (heldHead < held.length || router.saturated()) {
      queued++;
      held.push(i);
      return;
    }
    dispatch(i, t);
  };

  /** Routes a request that arrived (now or while held) and hands it to its engine. */
  const dispatch = (i: number, t: number) => {
    const hashes = hashesOf[i]!;
    hashesOf[i] = undefined;
    const tokens = bufferOf[i]!.subarray(0, promptTokens[i]!);
    const lora = workload[i]!.loraName;
    const decision = opts.servedBy !== undefined ? undefined : router.route({ seqHashes: hashes.sequence, promptTokens: tokens.length, blockSize, nowMs: t, exclude: lora === undefined ? undefined : loraExcluded?.get(lora) })!;
    if (decision === OVERLOADED) {
      rejected++;
      errors.set(i, "rejected: every worker is busy (over the router's busy thresholds)");
      complete(i, t);
      return;
    }
    const w = decision?.rankId ?? opts.servedBy![i]!;
    if (judged) oracleView!.judge(w, hashes.sequence, tokens.length);
    oracleView?.dispatched(w);
    active[i] = decision?.request;
    worker[i] = w;
    requestsPerRank[Math.floor(w / dp)]![w % dp]!++;
    sens?.dispatched(i, w, t);
    const added = engines[w]!.addRequest({ id: String(i), tokenIds: tokens, arrivalMs: t, adoptTokens: true, maxTokens: workload[i]!.outputLength, promptHashes: hashes, ...(lora !== undefined ? { loraName: lora } : {}) });
    if (!added.ok) {
      errors.set(i, added.reason);
      complete(i, t);
      return;
    }
    if (busy[w] === 0) startStep(w, t, true);
  };

  /** Routes held requests, oldest first, while the router has room (load dropped: first tokens, finishes). */
  const release = (t: number) => {
    while (heldHead < held.length && !router.saturated()) dispatch(held[heldHead++]!, t);
  };

  for (;;) {
    const tq = arrHead < arrT.length ? arrT[arrHead]! : Infinity;
    const ts = sessions ? sessions.peekMs() : Infinity;
    const ta = Math.min(tq, ts);
    const th = heap.peekTime();
    if (ta === Infinity && th === Infinity) break;
    if (th <= ta) {
      now = th;
      const entry = heap.pop();
      const w = entry >> 1;
      if ((entry & 1) === STEP_END) {
        sens?.stepEnded(w);
        stepDone(w, now);
      } else if (busy[w] === 0) {
        sens?.woke(w);
        startStep(w, now);
      }
    } else {
      now = ta;
      arrive(ts <= tq ? sessions!.pop() : arrI[arrHead++]!, now);
    }
  }

  for (let i = 0; i < n; i++) {
    if (!errors.has(i) && outputTokens[i]! < workload[i]!.outputLength) errors.set(i, `did not finish (${outputTokens[i]} of ${workload[i]!.outputLength} tokens)`);
  }
  const rankOf = worker.map((s) => (s < 0 ? s : s % dp));
  const workerOf = worker.map((s) => (s < 0 ? s : Math.floor(s / dp)));
  return {
    numRequests: n,
    worker: workerOf,
    dpRank: rankOf,
    arrivalMs,
    firstTokenMs,
    lastTokenMs,
    outputTokens,
    promptTokens,
    cachedTokens,
    hostLoadedTokens,
    errors,
    rejected,
    queued,
    itlMs: itl.subarray(0, itlLen),
    simulatedMs: now,
    requestsPerWorker: requestsPerRank.map((ranks) => ranks.reduce((a, b) => a + b, 0)),
    requestsPerRank,
    engines: engines.map((e) => e.metrics()),
    regret: judged ? oracleView!.summary() : undefined,
  };
}

/**
 * Reuses prompt+output token buffers by power-of-two size class: a full trace would otherwise
 * allocate (and page-fault in) gigabytes of short-lived 50 kB arrays.
 */
class TokenBufferPool {
  private readonly free = new Map<number, Uint32Array[]>();

  acquire(length: number): Uint32Array {
    const cls = Math.max(64, 2 ** Math.ceil(Math.log2(length)));
    const buf = this.free.get(cls)?.pop() ?? new Uint32Array(cls);
    return buf;
  }

  release(buf: Uint32Array): void {
    let list = this.free.get(buf.length);
    if (list === undefined) this.free.set(buf.length, (list = []));
    if (list.length < 1024) list.push(buf);
  }
}
