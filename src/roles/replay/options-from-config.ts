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
    // Each data-parallel rank is its own engine and routing candidate; the report keeps them apart.
    numWorkers: c.numWorkers,
    dataParallelSize: c.dataParallelSize,
    routerMode: c.routerMode,
    prefillLoadScale: c.routerKvOverlapScoreWeight,
    hostWeight: c.routerHostCacheHitWeight,
    diskWeight: c.routerDiskCacheHitWeight,
    routerTemperature: c.routerTemperature,
    busyThreshold: c.activeDecodeBlocksThreshold,
    engine: engineConfigFrom(c),
    seed: c.seed,
    outputJson: c.outputJson,
  };
}
