// Resolved `replay` config → the replay role's options (engine option keys → EngineConfig).
import type { ReplayConfig } from "../../config/replay.ts";
import { engineConfigFrom } from "../engine-config.ts";
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
    // Each data-parallel rank is its own engine and routing target.
    numWorkers: c.numWorkers * c.dataParallelSize,
    routerMode: c.routerMode,
    prefillLoadScale: c.kvOverlapScoreWeight,
    routerTemperature: c.routerTemperature,
    busyThreshold: c.activeDecodeBlocksThreshold,
    engine: engineConfigFrom(c),
    seed: c.seed,
    outputJson: c.outputJson,
  };
}
