// `kvcr-mock calibrate` as a function: read the measured run, fit a parametric timing profile to
// a share of its requests by replaying them (core/calibrate/fit.ts), judge it on the rest, print
// the report and write the profile. File reading, timing and printing live here.
import { basename, extname } from "node:path";
import { accuracyOf, type MetricAccuracy } from "../../core/calibrate/accuracy.ts";
import { fitParametric, simulatedTimes } from "../../core/calibrate/fit.ts";
import { meanItlMs, observedWorkload } from "../../core/calibrate/observed-workload.ts";
import { createRng } from "../../core/random/rng.ts";
import { simulate } from "../../core/replay/simulator.ts";
import type { ArrivalSpec } from "../../core/workload/arrivals.ts";
import { DEFAULT_ENGINE_CONFIG } from "../../core/engine/engine-config.ts";
import { KvcrError } from "../../lib/errors.ts";
import { PROFILE_SCHEMA, type ParametricModel, type ParametricProfile } from "../../protocol/timing-profile.ts";
import type { ReportDeps } from "../shared/measure/report-deps.ts";
import { readRunDocument } from "../shared/measure/run-document.ts";
import type { SimulatedStack } from "../shared/measure/simulated-stack.ts";
import { calibrationProfile } from "./calibration-profile.ts";
import { formatCalibration } from "./format-calibration.ts";
import { observedRun } from "./observed-run.ts";

/** Fewer completed requests than this cannot both fit seven costs and judge them. */
export const MIN_REQUESTS = 20;

export interface CalibrateOptions {
  from: string;
  /** "-" prints the profile instead of the report. */
  out: string;
  holdout: number;
  name?: string;
  seed: number;
  outputJson?: string;
  /** Arrivals for a run without send times (otherwise the run's own rate or concurrency). */
  concurrency?: number;
  requestRate?: number;
  /** The stack the run was served by; numWorkers undefined = what the run records, else 1. */
  stack: Omit<SimulatedStack, "numWorkers"> & { numWorkers?: number };
  /** The server's block size and G1 blocks, when given (otherwise the run's, else the engine's defaults). */
  blockSize?: number;
  numGpuBlocks?: number;
}

export interface CalibrateDeps extends ReportDeps {
  version: string;
}

export interface CalibrateOutcome {
  model: ParametricModel;
  accuracy: { ttft: MetricAccuracy; itl: MetricAccuracy; e2e: MetricAccuracy };
}

export function runCalibrate(o: CalibrateOptions, deps: CalibrateDeps): CalibrateOutcome {
  const started = deps.now();
  for (const [flag, path] of [["--out", o.out], ["--output-json", o.outputJson]] as const) {
    if (path === undefined || path === "-") continue;
    try {
      deps.checkWritable(path);
    } catch (err) {
      throw new KvcrError("OUTPUT_UNWRITABLE", `cannot write ${flag} ${path}: ${(err as Error).message}; nothing was fitted`);
    }
  }
  const run = observedRun(readRunDocument(o.from, deps.readFile, "--from"), o.from);
  for (const w of run.warnings) deps.logger.warn(w);
  const n = run.requests.length;
  if (n < MIN_REQUESTS) throw new KvcrError("CALIBRATE_TOO_FEW", `--from ${o.from}: ${n} completed request(s); calibrate needs at least ${MIN_REQUESTS} to fit on and judge on`);
  const arrival = arrivalOf(o, run.arrival, Number.isFinite(run.requests[0]!.sendMs));
  // The run's own routing when it names each request's worker: a replayed router would place the
  // made-up prompts elsewhere (they share prefixes only where the run said it found them).
  const served = run.servedBy !== undefined ? servedEngines(run.servedBy) : undefined;
  if (served !== undefined && (o.stack.numWorkers !== undefined || o.stack.dataParallelSize !== undefined && o.stack.dataParallelSize > 1)) {
    deps.logger.info(`the run names the worker of every request: replaying its own routing over its ${served.engines} worker(s); --num-workers and --data-parallel-size are not used`);
  }
  const numWorkers = served?.engines ?? o.stack.numWorkers ?? run.workers ?? 1;
  const dataParallelSize = served !== undefined ? 1 : (o.stack.dataParallelSize ?? 1);
  const blockSize = o.blockSize ?? run.server?.blockSize ?? DEFAULT_ENGINE_CONFIG.blockSize;
  const numGpuBlocks = o.numGpuBlocks ?? run.server?.numGpuBlocks ?? DEFAULT_ENGINE_CONFIG.numGpuBlocks;
  const fromServer = [o.blockSize === undefined && run.server?.blockSize !== undefined ? `block size ${blockSize}` : "", o.numGpuBlocks === undefined && run.server?.numGpuBlocks !== undefined ? `${numGpuBlocks} G1 blocks` : ""].filter(Boolean);
  if (fromServer.length > 0) deps.logger.info(`${fromServer.join(" and ")} from the server's vllm:cache_config_info in the run`);
  const engine = { ...o.stack.engine, blockSize, numGpuBlocks, speedupRatio: 1, decodeSpeedupRatio: 1, timingModel: "profile" as const };
  const { workload, cachedTokens, placedCachedTokens } = observedWorkload(run.requests, blockSize, served?.ranks);
  if (cachedTokens > 0 && placedCachedTokens < 0.9 * cachedTokens) {
    deps.logger.warn(`of the run's ${cachedTokens} cached prompt tokens, ${placedCachedTokens} could be given an earlier request's prefix (whole blocks of --block-size, after that request's first token): the rest are computed in the replay`);
  }
  const train = heldOutDraw(n, o.holdout, o.seed);
  const trained = train.reduce((s, v) => s + v, 0);
  const fit = fitParametric({
    observed: run.requests,
    train,
    engines: numWorkers * dataParallelSize,
    onStep: (step, error, model) => deps.logger.debug(`step ${step}: training error ${error.toPrecision(4)}, costs ${JSON.stringify(model)}`),
    replay: (model, sensitivity) =>
      simulate(
        workload,
        {
          engine: { ...engine, timingProfile: candidate(model) },
          numWorkers,
          dataParallelSize,
          // Routing as served, or one engine, asks no real choice: round-robin keeps no index to feed.
          routerMode: served !== undefined || numWorkers * dataParallelSize === 1 ? "round-robin" : o.stack.routerMode,
          router: o.stack.router,
          arrival,
          seed: o.seed,
          regret: false,
          sensitivity,
          ...(served !== undefined ? { servedBy: served.ranks } : {}),
        },
        { hasher: deps.hasher },
      ),
  });
  if (fit.sim.errors.size > 0) {
    const [i, reason] = fit.sim.errors.entries().next().value!;
    deps.logger.warn(`${fit.sim.errors.size} of the run's requests failed in the replay (request ${i}: ${reason}); give the server's --num-gpu-blocks-override, --max-num-seqs and --max-num-batched-tokens`);
  }
  const accuracy = heldOutAccuracy(run.requests, train, fit.sim);
  const name = o.name ?? basename(o.from, extname(o.from));
  const profile = calibrationProfile(fit, {
    name,
    from: o.from,
    version: deps.version,
    ...(run.model !== undefined ? { model: run.model } : {}),
    ...(run.backend !== undefined ? { backend: run.backend } : {}),
    requests: n,
    trained,
    heldOut: n - trained,
    holdout: o.holdout,
    seed: o.seed,
    stack: { num_workers: numWorkers, data_parallel_size: dataParallelSize, router_mode: served !== undefined ? "as served" : o.stack.routerMode, block_size: engine.blockSize, num_gpu_blocks: engine.numGpuBlocks, max_num_seqs: engine.maxNumSeqs, max_num_batched_tokens: engine.maxNumBatchedTokens },
    accuracy,
    ...(run.server?.meanTtftMs !== undefined ? { serverMeanTtftMs: run.server.meanTtftMs } : {}),
  });
  const text = JSON.stringify(profile, null, 2) + "\n";
  if (o.out === "-") deps.stdout.write(text);
  else {
    deps.writeFile(o.out, text);
    deps.stdout.write(formatCalibration({ model: fit.model, trained, heldOut: n - trained, holdout: o.holdout, replays: fit.replays, seconds: (deps.now() - started) / 1000, accuracy }));
    deps.logger.info(`wrote timing profile ${name} to ${o.out}: give it to replay, mocker or up as --timing-profile ${o.out}`);
  }
  if (o.outputJson !== undefined) {
    const report = JSON.stringify({ from: o.from, profile: o.out, model: fit.model, observed: profile.observed, ...profile.fit }, null, 2) + "\n";
    if (o.outputJson === "-") deps.stdout.write(report);
    else deps.writeFile(o.outputJson, report);
  }
  return { model: fit.model, accuracy };
}

/** A model the fit tries, as the profile the engines take. */
function candidate(parametric: ParametricModel): ParametricProfile {
  const unstated = { source: "calibrate", system: "-", framework: "-", frameworkVersion: "-", model: "-", licence: "-" };
  return { schema: PROFILE_SCHEMA, name: "calibrating", provenance: unstated, form: "parametric", parametric, observed: { prefillTokens: 0, prefillContext: 0, decodeBatch: 0, decodeContext: 0 } };
}

/** The run's own send times; otherwise the flags, then the run's rate or concurrency. */
function arrivalOf(o: CalibrateOptions, fromRun: ArrivalSpec | undefined, timed: boolean): ArrivalSpec {
  if (timed) return { kind: "trace", speedupRatio: 1 };
  if (o.concurrency !== undefined) return { kind: "concurrency", concurrency: o.concurrency };
  if (o.requestRate !== undefined) return { kind: "rate", requestsPerSecond: o.requestRate, scaleToRate: true };
  if (fromRun !== undefined) return fromRun;
  throw new KvcrError("CALIBRATE_NO_ARRIVALS", `--from ${o.from}: the run has no start_times, request_rate or max_concurrency; give --request-rate R or --concurrency N as it was run`);
}

/** Worker names as engine indices, in order of first appearance. */
function servedEngines(names: readonly string[]): { engines: number; ranks: Int32Array } {
  const index = new Map<string, number>();
  const ranks = Int32Array.from(names, (n) => {
    let k = index.get(n);
    if (k === undefined) index.set(n, (k = index.size));
    return k;
  });
  return { engines: index.size, ranks };
}

/** 1 = fitted on, 0 = held out: a seeded draw, at least one of each. */
function heldOutDraw(n: number, holdout: number, seed: number): Uint8Array {
  const rng = createRng(seed);
  const train = new Uint8Array(n);
  for (let i = 0; i < n; i++) train[i] = rng.next() < holdout ? 0 : 1;
  const kept = train.reduce((s, v) => s + v, 0);
  if (kept === 0) train[0] = 1;
  if (kept === n) train[n - 1] = 0;
  return train;
}

function heldOutAccuracy(requests: Parameters<typeof meanItlMs>[0][], train: Uint8Array, sim: Parameters<typeof simulatedTimes>[0]): CalibrateOutcome["accuracy"] {
  const obs = { ttft: [] as number[], itl: [] as number[], e2e: [] as number[] };
  const got = { ttft: [] as number[], itl: [] as number[], e2e: [] as number[] };
  requests.forEach((r, i) => {
    if (train[i] === 1) return;
    const s = simulatedTimes(sim, i);
    obs.ttft.push(r.ttftMs);
    got.ttft.push(s.ttftMs);
    obs.itl.push(meanItlMs(r));
    got.itl.push(s.itlMs);
    obs.e2e.push(r.e2eMs);
    got.e2e.push(s.e2eMs);
  });
  return { ttft: accuracyOf(obs.ttft, got.ttft), itl: accuracyOf(obs.itl, got.itl), e2e: accuracyOf(obs.e2e, got.e2e) };
}
