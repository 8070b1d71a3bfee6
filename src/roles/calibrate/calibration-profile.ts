// The profile calibrate writes: the fitted parametric model, the largest steps the run reached
// (past them the model is extrapolated, as its notes say), and what the fit reported. Pure.
import type { MetricAccuracy } from "../../core/calibrate/accuracy.ts";
import type { FitResult } from "../../core/calibrate/fit.ts";
import { PROFILE_SCHEMA, type ParametricProfile } from "../../protocol/timing-profile.ts";

export interface CalibrationFacts {
  name: string;
  /** The run file as given. */
  from: string;
  version: string;
  model?: string;
  backend?: string;
  requests: number;
  trained: number;
  heldOut: number;
  holdout: number;
  seed: number;
  /** The stack the run was replayed on. */
  stack: Record<string, unknown>;
  accuracy: { ttft: MetricAccuracy; itl: MetricAccuracy; e2e: MetricAccuracy };
  /** The server's own mean TTFT over the run (its /metrics), beside the client's measured one. */
  serverMeanTtftMs?: number;
}

export function calibrationProfile(fit: FitResult, f: CalibrationFacts): ParametricProfile {
  const o = fit.observedRange;
  const round = (x: number) => Math.round(x * 10) / 10;
  return {
    schema: PROFILE_SCHEMA,
    name: f.name,
    provenance: {
      source: `kvcr-mock calibrate --from ${f.from} (${f.requests} completed requests)`,
      system: "the measured server (not stated by the run)",
      framework: f.backend ?? "not stated",
      frameworkVersion: "not stated",
      model: f.model ?? "not stated",
      licence: "as the measured run's",
      generatedBy: `kvcr-mock ${f.version} calibrate`,
      notes:
        `Fitted on ${f.trained} requests, judged on ${f.heldOut} held out. A step costs the sum of its counts times these costs, so the model answers for any step; ` +
        `the run reached prefill steps of ${o.prefillTokens} new tokens at mean context ${round(o.prefillContext)} and decode batches of ${o.decodeBatch} at mean context ${round(o.decodeContext)}: past those (observed) it is extrapolated.`,
    },
    form: "parametric",
    parametric: fit.model,
    observed: { prefillTokens: o.prefillTokens, prefillContext: round(o.prefillContext), decodeBatch: o.decodeBatch, decodeContext: round(o.decodeContext) },
    fit: { requests: f.requests, trained: f.trained, held_out: f.heldOut, holdout: f.holdout, seed: f.seed, replays: fit.replays, stack: f.stack, held_out_accuracy: f.accuracy, ...(f.serverMeanTtftMs !== undefined ? { server_mean_ttft_ms: f.serverMeanTtftMs } : {}) },
  };
}
