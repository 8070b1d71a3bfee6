// Step times from a parametric profile: a sum of costs, each a coefficient times one of the step's
// counts (docs/timing.md). Linear in the coefficients, which is what lets `calibrate` fit them.
import type { ParametricModel } from "../../protocol/timing-profile.ts";
import type { StepShape, StepTimer } from "./step-timer.ts";

/** Each cost's place in a vector of them: the step terms in stepCounts' order, then the per-request cost. */
export const COST_ORDER: Readonly<Record<keyof ParametricModel, number>> = { stepMs: 0, prefillStepMs: 1, decodeStepMs: 2, prefillTokenMs: 3, prefillAttentionMs: 4, decodeRequestMs: 5, decodeContextMs: 6, requestMs: 7 };

/** The step's counts: the costs before requestMs (which is per request). */
export const STEP_TERMS = 7;

/** Writes the step's counts into out[0..7): 1 if it computes anything, 1 if it prefills, 1 if it decodes, new tokens, attended pairs, decodes, decode context. */
export function stepCounts(s: StepShape, out: Float64Array): void {
  out[0] = s.prefillTokens > 0 || s.decodeRequests > 0 ? 1 : 0;
  out[1] = s.prefillTokens > 0 ? 1 : 0;
  out[2] = s.decodeRequests > 0 ? 1 : 0;
  out[3] = s.prefillTokens;
  out[4] = s.prefillContextTokenProduct + s.prefillSelfPairs;
  out[5] = s.decodeRequests;
  out[6] = s.decodeContextTokens;
}

export class ParametricTimer implements StepTimer {
  readonly requestMs: number;

  constructor(private readonly m: ParametricModel) {
    this.requestMs = m.requestMs;
  }

  contextRefusal(): string | undefined {
    return undefined; // a linear model answers for any context
  }

  /** The step's own cost and its prefill: the part a decode speedup does not divide. */
  prefillPartMs(s: StepShape): number {
    const m = this.m;
    if (s.prefillTokens <= 0) return s.decodeRequests > 0 ? m.stepMs : 0;
    return m.stepMs + m.prefillStepMs + m.prefillTokenMs * s.prefillTokens + m.prefillAttentionMs * (s.prefillContextTokenProduct + s.prefillSelfPairs);
  }

  decodePartMs(s: StepShape): number {
    if (s.decodeRequests <= 0) return 0;
    return this.m.decodeStepMs + this.m.decodeRequestMs * s.decodeRequests + this.m.decodeContextMs * s.decodeContextTokens;
  }

  prefillMs(tokens: number, context: number): number {
    if (tokens <= 0) return 0;
    const m = this.m;
    return m.stepMs + m.prefillStepMs + m.prefillTokenMs * tokens + m.prefillAttentionMs * (tokens * context + (tokens * (tokens + 1)) / 2);
  }
}
