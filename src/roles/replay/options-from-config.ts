// Resolved `replay` config → the replay role's options (router and engine flags → the simulated stack).
import type { ReplayConfig } from "../../config/replay.ts";
import { simulatedStackFrom } from "../simulated-stack.ts";
import type { ReplayOptions } from "./run-replay.ts";

export function replayOptionsFrom(c: ReplayConfig): ReplayOptions {
  return {
    trace: c.trace,
    traceBlockSize: c.traceBlockSize,
    skipBadLines: c.skipBadLines,
    synthetic: { numPrefixes: c.numPrefixes, prefixTokens: c.prefixTokens, suffixTokens: c.suffixTokens, outputTokens: c.outputTokens },
    requests: c.requests,
    concurrency: c.concurrency,
    requestRate: c.requestRate,
    arrivalSpeedupRatio: c.traceSpeedup ?? c.arrivalSpeedupRatio,
    ...simulatedStackFrom(c),
    seed: c.seed,
    outputJson: c.outputJson,
  };
}
