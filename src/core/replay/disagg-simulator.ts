// Offline replay of a disaggregated stack on one virtual clock: prefill legs placed by KV overlap
// (max_tokens 1, blocks held), decode legs by load, each pulling its prompt for bytes / bandwidth
// before its first token (the TTFT a P/D proxy's client sees); a landed pull frees the prefill's blocks.
import { KvIndex } from "../index/kv-index.ts";
import type { BlockHashes, BlockHasher } from "../kv/block-hash.ts";
import type { EngineConfig } from "../engine/engine-config.ts";
import type { StepResult } from "../engine/engine-types.ts";
import { MockEngine, type EngineDeps } from "../engine/mock-engine.ts";
import { createRng } from "../random/rng.ts";
import type { ActiveRequest } from "../routing/active-load.ts";
import { Router } from "../routing/router.ts";
import { OVERLOADED, type RouterOptions } from "../routing/router-options.ts";
import { arrivalTimesMs, firstArrivals, type ArrivalSpec } from "../workload/arrivals.ts";
import type { WorkloadRequest } from "../workload/workload.ts";
import { EventHeap } from "./event-heap.ts";
import type { SimulationResult } from "./simulator.ts";

export interface DisaggSimulationOptions {
  /** Both pools' engine settings; the decode pool's pull timing comes from kvTransferBandwidthGbps and kvTransferTimingMode. */
  engine: Partial<EngineConfig>;
  prefillWorkers: number;
  decodeWorkers: number;
  /** The kv router's tuning for the prefill leg (the decode leg takes it with overlap credit 0). */
  router?: Omit<RouterOptions, "mode">;
  arrival: ArrivalSpec;
  seed: number;
  onProgress?: (done: number, total: number) => void;
}

/** The hand-over's figures: pulls that landed, their bytes and modelled time. */
export interface DisaggFigures {
  prefill_workers: number;
  decode_workers: number;
  kv_transfer_timing_mode: string;
  kv_transfers: number;
  kv_transfer_bytes: number;
  mean_kv_transfer_ms: number;
  /** Prompt tokens the decode workers pulled (their own hits were not). */
  pulled_tokens: number;
}

const STEP_END = 0;
const WAKE = 1;

export function simulateDisagg(workload: readonly WorkloadRequest[], opts: DisaggSimulationOptions, deps: EngineDeps): SimulationResult & { disagg: DisaggFigures } {
  const n = workload.length;
  const P = opts.prefillWorkers;
  const W = P + opts.decodeWorkers;
  const engineCfg = { ...opts.engine, speedupRatio: 1 };
  // Engines 0..P−1 prefill, P..W−1 decode; each router numbers its own pool from 0.
  const engines = Array.from({ length: W }, () => new MockEngine(engineCfg, deps));
  const blockSize = engines[0]!.config.blockSize;
  const rng = createRng(opts.seed);
  const prefillIndex = new KvIndex();
  const prefillRouter = new Router({ ...opts.router, mode: "kv" }, rng, prefillIndex);
  const decodeRouter = new Router({ ...opts.router, mode: "kv", overlapScoreCredit: 0 }, rng, new KvIndex());
  for (let s = 0; s < W; s++) {
    const c = engines[s]!.config;
    const pool = s < P ? prefillRouter : decodeRouter;
    const id = s < P ? s : s - P;
    pool.add(id, { capacityBlocks: c.numGpuBlocks, worker: id, maxNumBatchedTokens: c.maxNumBatchedTokens });
  }

  const worker = new Int32Array(n).fill(-1);
  const arrivalMs = new Float64Array(n);
  const firstTokenMs = new Float64Array(n).fill(NaN);
  const lastTokenMs = new Float64Array(n).fill(NaN);
  const outputTokens = new Int32Array(n);
  const promptTokens = new Int32Array(n);
  const cachedTokens = new Int32Array(n);
  const hostLoadedTokens = new Int32Array(n);
  const prefillOf = new Int32Array(n).fill(-1);
  const active: (ActiveRequest | undefined)[] = new Array(n);
  const hashesOf: (BlockHashes | undefined)[] = new Array(n);
  const tokensOf: (Uint32Array | undefined)[] = new Array(n);
  const errors = new Map<number, string>();
  let rejected = 0;
  const requestsPerWorker = new Array<number>(W).fill(0);
  const itl: number[] = [];
  const figures: DisaggFigures = { prefill_workers: P, decode_workers: opts.decodeWorkers, kv_transfer_timing_mode: engines[P]?.config.kvTransferTimingMode ?? "full_prompt", kv_transfers: 0, kv_transfer_bytes: 0, mean_kv_transfer_ms: 0, pulled_tokens: 0 };
  let transferMsSum = 0;

  let arrHead = 0;
  const times = arrivalTimesMs(workload, opts.arrival, rng);
  const first = firstArrivals(n, times, opts.arrival);
  const { time: arrT, index: arrI } = first;
  let nextClosed = first.nextClosed;

  const heap = new EventHeap();
  const busy = new Uint8Array(W);
  const pending: (StepResult | undefined)[] = new Array(W);
  let done = 0;
  const progressEvery = Math.max(1, Math.floor(n / 100));
  let now = 0;

  const complete = (i: number, t: number) => {
    tokensOf[i] = undefined;
    hashesOf[i] = undefined;
    done++;
    if (opts.onProgress && (done % progressEvery === 0 || done === n)) opts.onProgress(done, n);
    if (times === undefined && nextClosed < n) {
      arrT.push(t);
      arrI.push(nextClosed++);
    }
  };
  const fail = (i: number, t: number, why: string) => {
    errors.set(i, why);
    complete(i, t);
  };
  /** The prefill side may free a request's blocks: its pull landed (or will never happen). */
  const releaseHeld = (i: number) => {
    const s = prefillOf[i]!;
    if (s < 0) return;
    prefillOf[i] = -1;
    engines[s]!.releaseHeld(String(i));
    // Freed blocks may admit a request that waited for room: an idle prefill engine steps again now.
    if (busy[s] === 0 && engines[s]!.pendingRequests > 0) heap.push(now, s * 2 + WAKE);
  };

  const startStep = (s: number, t: number) => {
    const res = engines[s]!.step(t);
    if (res.remoteLoads) landed(res);
    if (res.scheduledRequests > 0) {
      busy[s] = 1;
      pending[s] = res;
      heap.push(t + res.durationMs, s * 2 + STEP_END);
      return;
    }
    busy[s] = 0;
    if (s < P && res.events.length > 0) prefillIndex.applyAll(s, res.events);
    const wake = engines[s]!.nextWakeMs();
    if (wake !== undefined) heap.push(Math.max(wake, t), s * 2 + WAKE);
  };

  const landed = (res: StepResult) => {
    for (const l of res.remoteLoads!) {
      const i = Number(l.requestId);
      releaseHeld(i);
      figures.kv_transfers++;
      figures.kv_transfer_bytes += l.bytes;
      figures.pulled_tokens += l.tokens;
      transferMsSum += l.transferMs;
    }
  };

  const prefillDone = (s: number, t: number, res: StepResult) => {
    // The prefill leg's own token is the proxy's to discard: only the decode leg's reach the client.
    for (const tok of res.tokens) prefillRouter.firstToken(active[Number(tok.requestId)]!);
    for (const f of res.finished) {
      const i = Number(f.requestId);
      prefillRouter.finish(active[i]!);
      cachedTokens[i] = f.cachedTokens;
      hostLoadedTokens[i] = f.hostLoadedTokens;
      prefillOf[i] = s;
      dispatchDecode(i, t);
    }
  };

  const decodeDone = (t: number, res: StepResult) => {
    for (const tok of res.tokens) {
      const i = Number(tok.requestId);
      const last = lastTokenMs[i]!;
      if (last !== last) {
        firstTokenMs[i] = t;
        decodeRouter.firstToken(active[i]!);
      } else itl.push(t - last);
      lastTokenMs[i] = t;
      outputTokens[i]!++;
    }
    for (const f of res.finished) {
      const i = Number(f.requestId);
      decodeRouter.finish(active[i]!);
      active[i] = undefined;
      complete(i, t);
    }
  };

  const stepDone = (s: number, t: number) => {
    const res = pending[s]!;
    pending[s] = undefined;
    if (s < P) {
      if (res.events.length > 0) prefillIndex.applyAll(s, res.events);
      prefillDone(s, t, res);
    } else decodeDone(t, res);
    startStep(s, t);
  };

  const route = (router: Router, i: number, t: number) => router.route({ seqHashes: hashesOf[i]!.sequence, promptTokens: promptTokens[i]!, blockSize, nowMs: t })!;

  const arrive = (i: number, t: number) => {
    const req = workload[i]!;
    arrivalMs[i] = t;
    const buffer = new Uint32Array(req.inputLength + req.outputLength);
    req.writeTokens(buffer);
    const tokens = buffer.subarray(0, req.inputLength);
    tokensOf[i] = buffer;
    promptTokens[i] = tokens.length;
    // An adapter's blocks are its own (hashed under its seed), as in the aggregated replay.
    hashesOf[i] = req.loraName === undefined ? deps.hasher.hashBlocks(tokens, blockSize) : deps.hasher.hashBlocks(tokens, blockSize, undefined, deps.hasher.seedOf(req.loraName));
    const decision = route(prefillRouter, i, t);
    if (decision === OVERLOADED) {
      rejected++;
      return fail(i, t, "rejected: every prefill worker is busy (over the router's busy thresholds)");
    }
    const s = decision.rankId;
    active[i] = decision.request;
    requestsPerWorker[s]!++;
    // The prefill engine copies the prompt: the buffer goes on to the decode engine.
    const added = engines[s]!.addRequest({ id: String(i), tokenIds: tokens, maxTokens: 1, holdBlocks: true, promptHashes: hashesOf[i], ...(req.loraName !== undefined ? { loraName: req.loraName } : {}) });
    if (!added.ok) {
      prefillRouter.finish(decision.request);
      return fail(i, t, `prefill: ${added.reason}`);
    }
    if (busy[s] === 0) startStep(s, t);
  };

  const dispatchDecode = (i: number, t: number) => {
    const decision = route(decodeRouter, i, t);
    if (decision === OVERLOADED) {
      rejected++;
      releaseHeld(i);
      active[i] = undefined;
      return fail(i, t, "rejected: every decode worker is busy (over the router's busy thresholds)");
    }
    const s = P + decision.rankId;
    active[i] = decision.request;
    worker[i] = s;
    requestsPerWorker[s]!++;
    const tokens = tokensOf[i]!.subarray(0, promptTokens[i]!);
    const added = engines[s]!.addRequest({ id: String(i), tokenIds: tokens, adoptTokens: true, maxTokens: workload[i]!.outputLength, remotePrefill: true, promptHashes: hashesOf[i], ...(workload[i]!.loraName !== undefined ? { loraName: workload[i]!.loraName } : {}) });
    if (!added.ok) {
      decodeRouter.finish(decision.request);
      releaseHeld(i);
      active[i] = undefined;
      return fail(i, t, `decode: ${added.reason}`);
    }
    if (busy[s] === 0) startStep(s, t);
  };

  for (;;) {
    const ta = arrHead < arrT.length ? arrT[arrHead]! : Infinity;
    const th = heap.peekTime();
    if (ta === Infinity && th === Infinity) break;
    if (th <= ta) {
      now = th;
      const entry = heap.pop();
      const s = entry >> 1;
      if ((entry & 1) === STEP_END) stepDone(s, now);
      else if (busy[s] === 0) startStep(s, now);
    } else {
      now = ta;
      arrive(arrI[arrHead++]!, now);
    }
  }

  for (let i = 0; i < n; i++) {
    if (!errors.has(i) && outputTokens[i]! < workload[i]!.outputLength) errors.set(i, `did not finish (${outputTokens[i]} of ${workload[i]!.outputLength} tokens)`);
  }
  figures.mean_kv_transfer_ms = figures.kv_transfers > 0 ? transferMsSum / figures.kv_transfers : 0;
  return {
    numRequests: n,
    worker,
    dpRank: worker.map((s) => (s < 0 ? s : 0)),
    arrivalMs,
    firstTokenMs,
    lastTokenMs,
    outputTokens,
    promptTokens,
    cachedTokens,
    hostLoadedTokens,
    errors,
    rejected,
    queued: 0,
    itlMs: Float64Array.from(itl),
    simulatedMs: now,
    requestsPerWorker,
    requestsPerRank: requestsPerWorker.map((c) => [c]),
    engines: engines.map((e) => e.metrics()),
    disagg: figures,
  };
}
