// Fits a parametric step model to a measured run: replay the run's requests with a guess, then
// improve the guess by least squares on the log errors of the training requests' TTFT and mean
// ITL, pooled over neighbouring requests, with gradients taken with the replay's schedule held
// fixed (Gauss–Newton, costs kept ≥ 0, a step halved or damped while it does not help), until the
// error stops falling. Pure: `replay` is the simulator with the run's stack. docs/timing.md
// ("Calibrating to your own server") explains the model.
import type { ObservedRange, ParametricModel } from "../../protocol/timing-profile.ts";
import { COST_ORDER } from "../timing/parametric-timer.ts";
import type { SimulationResult } from "../replay/simulator.ts";
import { COST_TERMS, Sensitivity } from "../replay/sensitivity.ts";
import { percentile } from "../replay/stats.ts";
import { meanItlMs, type ObservedRequest } from "./observed-workload.ts";
import { nnls } from "./nnls.ts";

export interface FitInput {
  observed: readonly ObservedRequest[];
  /** 1 where the request is fitted on; the rest are held out. */
  train: Uint8Array;
  /** Engines the replay runs (sizes the sensitivity). */
  engines: number;
  /** Replays the run's requests with this model, feeding `sensitivity`. */
  replay(model: ParametricModel, sensitivity: Sensitivity): SimulationResult;
  maxIterations?: number;
  /** Told after each Gauss–Newton step: its number, the training error and the costs it reached. */
  onStep?: (step: number, error: number, model: ParametricModel) => void;
}

export interface FitResult {
  model: ParametricModel;
  /** The replay with the fitted model. */
  sim: SimulationResult;
  observedRange: ObservedRange;
  /** Replays run, and the final mean squared pooled log error of the training requests. */
  replays: number;
  trainingError: number;
}

interface Evaluated {
  theta: Float64Array;
  sim: SimulationResult;
  sens: Sensitivity;
  error: number;
}

export function fitParametric(input: FitInput): FitResult {
  const { observed, train } = input;
  const maxIterations = input.maxIterations ?? 12;
  let replays = 0;
  const evaluate = (theta: Float64Array): Evaluated => {
    const sens = new Sensitivity(observed.length, input.engines);
    const sim = input.replay(modelOf(theta), sens);
    replays++;
    return { theta, sim, sens, error: trainingError(observed, train, sim) };
  };
  let best = evaluate(initialGuess(observed, train));
  // A step that does not lower the error is halved toward the current costs (the replay's batches
  // grow as steps slow, which the linearisation holds fixed, so a full step can overshoot), then
  // retried damped (toward a short step down the gradient).
  for (let it = 0; it < maxIterations; it++) {
    const solve = linearised(observed, train, best);
    const full = solve(1e-6);
    const tries = [1, 0.5, 0.25].map((a) => () => Float64Array.from(full, (v, k) => best.theta[k]! + a * (v - best.theta[k]!)));
    tries.push(() => solve(1));
    let next: Evaluated | undefined;
    for (const t of tries) {
      const tried = evaluate(t());
      if (tried.error < best.error) {
        next = tried;
        break;
      }
    }
    if (next === undefined) break;
    input.onStep?.(it + 1, next.error, modelOf(next.theta));
    const gain = (best.error - next.error) / Math.max(best.error, 1e-300);
    best = next;
    // Pooled times within about 1 % (RMS), or no real gain: what is left is the schedule's chaos.
    if (best.error < 1e-4 || gain < 1e-3) break;
  }
  const big = best.sens.largest;
  return { model: modelOf(best.theta), sim: best.sim, observedRange: { ...big }, replays, trainingError: best.error };
}

function modelOf(theta: Float64Array): ParametricModel {
  const m = {} as ParametricModel;
  for (const k of Object.keys(COST_ORDER) as (keyof ParametricModel)[]) m[k] = theta[COST_ORDER[k]]!;
  return m;
}

/** A replayed request's TTFT, mean ITL and E2E (NaN when it produced no token or failed). */
export function simulatedTimes(sim: SimulationResult, i: number): { ttftMs: number; itlMs: number; e2eMs: number } {
  const out = sim.outputTokens[i]!;
  if (sim.errors.has(i) || out === 0) return { ttftMs: NaN, itlMs: NaN, e2eMs: NaN };
  const first = sim.firstTokenMs[i]!;
  const last = sim.lastTokenMs[i]!;
  return { ttftMs: first - sim.arrivalMs[i]!, itlMs: out >= 2 ? (last - first) / (out - 1) : NaN, e2eMs: last - sim.arrivalMs[i]! };
}

/**
 * Consecutive training requests pooled into one row per metric (their mean log error), about 25
 * rows each: a schedule is chaotic (costs 0.1 % apart already move single requests by a step, so
 * per request the error is rugged at that scale), and pooling neighbours in time keeps what the
 * costs decide while it averages out which request took the hit.
 */
function poolSize(train: Uint8Array): number {
  return Math.max(1, Math.floor(train.reduce((n, v) => n + v, 0) / 25));
}

/** What a request the replay failed adds: as far off as a factor of 1,000. A time of 0 counts as 1 µs. */
const FAILED_ROW = Math.log(1000);

/** The mean over pooled rows of the squared mean log error ln(replayed/measured) of TTFT and of mean ITL. */
function trainingError(observed: readonly ObservedRequest[], train: Uint8Array, sim: SimulationResult): number {
  let sum = 0;
  let rows = 0;
  const pools = new Pools(poolSize(train), 0, (_, b) => {
    sum += b * b;
    rows++;
  });
  for (let i = 0; i < observed.length; i++) {
    if (train[i] !== 1) continue;
    const o = observed[i]!;
    const s = simulatedTimes(sim, i);
    const pairs = [[o.ttftMs, s.ttftMs], [meanItlMs(o), s.itlMs]] as const;
    for (let m = 0; m < 2; m++) {
      const [obs, got] = pairs[m]!;
      if (obs > 0) pools.add(m, Number.isFinite(got) ? Math.log(Math.max(got, 1e-3) / obs) : FAILED_ROW);
    }
  }
  pools.end();
  return rows > 0 ? sum / rows : 0;
}

/** Rows pooled per metric (TTFT, ITL): `size` consecutive ones summed, then handed on as their mean; the remainders at `end`. */
class Pools {
  private readonly a: Float64Array[];
  private readonly b = [0, 0];
  private readonly n = [0, 0];

  constructor(private readonly size: number, width: number, private readonly onRow: (a: Float64Array, b: number) => void) {
    this.a = [new Float64Array(width), new Float64Array(width)];
  }

  add(m: number, b: number, a?: Float64Array): void {
    if (a !== undefined) {
      const sum = this.a[m]!;
      for (let k = 0; k < sum.length; k++) sum[k]! += a[k]!;
    }
    this.b[m]! += b;
    if (++this.n[m]! === this.size) this.flush(m);
  }

  end(): void {
    for (let m = 0; m < 2; m++) if (this.n[m]! > 0) this.flush(m);
  }

  private flush(m: number): void {
    const a = this.a[m]!;
    const n = this.n[m]!;
    for (let k = 0; k < a.length; k++) a[k]! /= n;
    this.onRow(a, this.b[m]! / n);
    a.fill(0);
    this.b[m] = this.n[m] = 0;
  }
}

/**
 * The least-squares costs for the linearised replay, as a function of the damping: each row is the
 * mean log error of a pool of training requests' TTFT or mean ITL, so every request weighs alike;
 * columns scaled to unit norm, damped toward the current costs (directions the run does not inform
 * stay put, and more damping shortens the step).
 */
function linearised(observed: readonly ObservedRequest[], train: Uint8Array, at: Evaluated): (damping: number) => Float64Array<ArrayBuffer> {
  const K = COST_TERMS;
  const Q = new Float64Array(K * K);
  const c = new Float64Array(K);
  const g = new Float64Array(K);
  const { sim, sens, theta } = at;
  const pools = new Pools(poolSize(train), K, (a, b) => {
    for (let j = 0; j < K; j++) {
      if (a[j] === 0) continue;
      c[j]! += a[j]! * b;
      for (let k = 0; k < K; k++) Q[j * K + k]! += a[j]! * a[k]!;
    }
  });
  const row = new Float64Array(K);
  const addRow = (m: number, obs: number, got: number, grad: Float64Array) => {
    // The log error ln(got/obs), linearised: ln(got + grad·(θ' − θ)) ≈ ln(got) + grad·(θ' − θ)/got,
    // so the row is grad/got against ln(obs/got) + grad·θ/got.
    let b = Math.log(obs / got);
    for (let k = 0; k < K; k++) {
      row[k] = grad[k]! / got;
      b += row[k]! * theta[k]!;
    }
    pools.add(m, b, row);
  };
  for (let i = 0; i < observed.length; i++) {
    if (train[i] !== 1) continue;
    const o = observed[i]!;
    const s = simulatedTimes(sim, i);
    if (o.ttftMs > 0 && s.ttftMs > 0 && Number.isFinite(s.ttftMs)) {
      sens.ttft(i, g);
      addRow(0, o.ttftMs, s.ttftMs, g);
    }
    const itl = meanItlMs(o);
    if (itl > 0 && s.itlMs > 0 && Number.isFinite(s.itlMs)) {
      sens.meanItl(i, sim.outputTokens[i]! - 1, g);
      addRow(1, itl, s.itlMs, g);
    }
  }
  pools.end();
  const scale = new Float64Array(K);
  for (let k = 0; k < K; k++) scale[k] = Q[k * K + k]! > 0 ? Math.sqrt(Q[k * K + k]!) : 1;
  for (let j = 0; j < K; j++) {
    for (let k = 0; k < K; k++) Q[j * K + k]! /= scale[j]! * scale[k]!;
    c[j]! /= scale[j]!;
  }
  return (damping) => {
    const Qd = Q.slice();
    const cd = c.slice();
    for (let j = 0; j < K; j++) {
      Qd[j * K + j]! += damping;
      cd[j]! += damping * theta[j]! * scale[j]!;
    }
    return Float64Array.from(nnls(Qd, cd, K), (v, k) => v / scale[k]!);
  };
}

/**
 * A first guess from the run alone: a decode step near the median ITL, spread over the mean number of
 * requests in flight (Little's law); prefill near the quickest TTFT per computed prompt token.
 */
function initialGuess(observed: readonly ObservedRequest[], train: Uint8Array): Float64Array {
  const itls: number[] = [];
  const perToken: number[] = [];
  let busyMs = 0;
  let start = Infinity;
  let end = -Infinity;
  let context = 0;
  let prompt = 0;
  let n = 0;
  for (let i = 0; i < observed.length; i++) {
    if (train[i] !== 1) continue;
    const o = observed[i]!;
    const itl = meanItlMs(o);
    if (itl > 0) itls.push(itl);
    const computed = o.promptTokens - (Number.isFinite(o.cachedTokens) ? o.cachedTokens : 0);
    if (o.ttftMs > 0 && computed > 0) perToken.push(o.ttftMs / computed);
    busyMs += o.e2eMs;
    if (Number.isFinite(o.sendMs)) {
      start = Math.min(start, o.sendMs);
      end = Math.max(end, o.sendMs + o.e2eMs);
    }
    context += o.promptTokens + o.outputTokens / 2;
    prompt += o.promptTokens;
    n++;
  }
  const q = (v: number[], p: number) => (v.length > 0 ? percentile(Float64Array.from(v), p) : 1);
  const itl = q(itls, 50);
  const inFlight = end > start ? Math.max(1, busyMs / (end - start)) : 1;
  const meanContext = n > 0 ? context / n : 1;
  const meanPrompt = n > 0 ? Math.max(1, prompt / n) : 1;
  const tokenMs = q(perToken, 10);
  // A third of that: a replay that starts too fast has no queues, so its first step is nearly exact.
  const f = 1 / 3;
  return Float64Array.from([f * 0.5 * itl, 0, 0, f * 0.8 * tokenMs, (f * 0.4 * tokenMs) / meanPrompt, (f * 0.3 * itl) / inFlight, (f * 0.2 * itl) / (inFlight * meanContext), 0]);
}
