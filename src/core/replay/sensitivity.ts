// How a replay's request times move with a parametric profile's costs, the run's schedule held
// fixed: a step ends at its start plus each cost times the step's count of it, and a request is
// ready its per-request cost after it arrives, so the times are linear in the costs. A request's
// times are taken from its arrival: what moves them is the rest of the step it arrived during
// (in proportion) and the steps after it, not the busy period before it, whose end would shift
// the arrival's place in it. `calibrate` fits the costs from these gradients (a Gauss–Newton
// step); the simulator feeds them.
import { STEP_TERMS, stepCounts } from "../timing/parametric-timer.ts";
import type { StepShape } from "../timing/step-timer.ts";

/** The costs in ParametricModel order (PARAMETRIC_TERMS): the five step terms, then requestMs. */
export const COST_TERMS = STEP_TERMS + 1;
const REQUEST = STEP_TERMS;
const K = COST_TERMS;

export class Sensitivity {
  /** Per request (× K): what its times are measured from, and the gradient of its first and last token. */
  private readonly origin: Float64Array;
  private readonly send: Float64Array;
  private readonly first: Float64Array;
  private readonly last: Float64Array;
  /** The gradient of the time of the event being handled. */
  private readonly now = new Float64Array(K);
  /** Per engine: the gradient of its running step's end and that step's counts, its end and length; when its last request is ready. */
  private readonly stepEnd: Float64Array;
  private readonly stepCountsOf: Float64Array;
  private readonly stepEndMs: Float64Array;
  private readonly stepMs: Float64Array;
  private readonly running: Uint8Array;
  private readonly ready: Float64Array;
  private readonly counts = new Float64Array(STEP_TERMS);
  /** The largest step shapes seen: new tokens and their mean context, decode batch and its mean context. */
  readonly largest = { prefillTokens: 0, prefillContext: 0, decodeBatch: 0, decodeContext: 0 };

  constructor(requests: number, engines: number) {
    this.origin = new Float64Array(requests * K);
    this.send = new Float64Array(requests * K);
    this.first = new Float64Array(requests * K);
    this.last = new Float64Array(requests * K);
    this.stepEnd = new Float64Array(engines * K);
    this.stepCountsOf = new Float64Array(engines * K);
    this.stepEndMs = new Float64Array(engines);
    this.stepMs = new Float64Array(engines);
    this.running = new Uint8Array(engines);
    this.ready = new Float64Array(engines * K);
  }

  /** Request i is sent now (a closed loop's next request, when one completes). */
  sent(i: number): void {
    this.send.set(this.now, i * K);
  }

  /** Request i arrives: the event's time is its send time. */
  arrived(i: number): void {
    this.now.set(this.send.subarray(i * K, (i + 1) * K));
  }

  /** Request i reached engine w at `t`; it is ready its per-request cost later. */
  dispatched(i: number, w: number, t: number): void {
    const at = w * K;
    this.ready.set(this.now, at);
    this.ready[at + REQUEST]! += 1;
    const o = i * K;
    if (this.running[w] === 1 && this.stepMs[w]! > 0) {
      // What is left of the step under way counts in proportion; the steps before it not at all. A
      // later ready time moves the first token by as much on average (arrivals fall anywhere in a step).
      const left = (this.stepEndMs[w]! - t) / this.stepMs[w]!;
      for (let k = 0; k < K; k++) this.origin[o + k] = this.stepEnd[at + k]! - left * this.stepCountsOf[at + k]!;
      this.origin[o + REQUEST]! -= 1;
    } else this.origin.set(this.now, o);
  }

  /** Engine w starts a step of this shape and length at `t`: on a request's arrival (an idle engine, once it is ready) or as its last one ended. */
  stepStarted(w: number, shape: Readonly<StepShape>, onArrival: boolean, t: number, durationMs: number): void {
    const from = onArrival ? this.ready.subarray(w * K, (w + 1) * K) : this.now;
    stepCounts(shape, this.counts);
    this.note(shape);
    const at = w * K;
    for (let k = 0; k < STEP_TERMS; k++) {
      this.stepEnd[at + k] = from[k]! + this.counts[k]!;
      this.stepCountsOf[at + k] = this.counts[k]!;
    }
    this.stepEnd[at + REQUEST] = from[REQUEST]!;
    this.stepCountsOf[at + REQUEST] = 0;
    this.stepEndMs[w] = t + durationMs;
    this.stepMs[w] = durationMs;
    this.running[w] = 1;
  }

  /** Engine w's step ends now. */
  stepEnded(w: number): void {
    this.now.set(this.stepEnd.subarray(w * K, (w + 1) * K));
    this.running[w] = 0;
  }

  /** Engine w wakes now: taken as its last request becoming ready (a transfer landing is not a cost of the model). */
  woke(w: number): void {
    this.now.set(this.ready.subarray(w * K, (w + 1) * K));
  }

  /** Request i got a token now (its first, or a later one). */
  token(i: number, isFirst: boolean): void {
    if (isFirst) this.first.set(this.now, i * K);
    this.last.set(this.now, i * K);
  }

  /** The gradients of request i's TTFT, and of its mean gap over `gaps` gaps, into out (K each). */
  ttft(i: number, out: Float64Array): void {
    for (let k = 0; k < K; k++) out[k] = this.first[i * K + k]! - this.origin[i * K + k]!;
  }

  meanItl(i: number, gaps: number, out: Float64Array): void {
    for (let k = 0; k < K; k++) out[k] = (this.last[i * K + k]! - this.first[i * K + k]!) / gaps;
  }

  private note(shape: Readonly<StepShape>): void {
    const big = this.largest;
    if (shape.prefillTokens > 0) {
      big.prefillTokens = Math.max(big.prefillTokens, shape.prefillTokens);
      big.prefillContext = Math.max(big.prefillContext, shape.prefillContextTokenProduct / shape.prefillTokens);
    }
    if (shape.decodeRequests > 0) {
      big.decodeBatch = Math.max(big.decodeBatch, shape.decodeRequests);
      big.decodeContext = Math.max(big.decodeContext, shape.decodeContextTokens / shape.decodeRequests);
    }
  }
}
