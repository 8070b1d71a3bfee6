// Resolved `replay` config → the replay role's options (engine option keys → EngineConfig).
import type { EngineConfig } from "../../core/engine/engine-config.ts";
import type { ReplayConfig } from "../../config/replay.ts";
import type { ReplayOptions } from "./run-replay.ts";

type EngineKeys = Pick<ReplayConfig, "blockSize" | "numGpuBlocksOverride" | "numHostBlocks" | "hostOffloadD2hBandwidthGbps" | "hostOffloadH2dBandwidthGbps" | "kvBytesPerToken" | "maxNumSeqs" | "maxNumBatchedTokens" | "enablePrefixCaching" | "enableChunkedPrefill" | "preemptionMode" | "speedupRatio" | "decodeSpeedupRatio" | "timingModel" | "prefillMs" | "decodeMs" | "seed">;

/** The engine options of §3 as one engine's config (shared by any role that builds engines). */
export function engineConfigFrom(c: EngineKeys): Partial<EngineConfig> {
  return {
    blockSize: c.blockSize,
    numGpuBlocks: c.numGpuBlocksOverride,
    numHostBlocks: c.numHostBlocks,
    hostOffloadD2hBandwidthGbps: c.hostOffloadD2hBandwidthGbps,
    hostOffloadH2dBandwidthGbps: c.hostOffloadH2dBandwidthGbps,
    kvBytesPerToken: c.kvBytesPerToken,
    maxNumSeqs: c.maxNumSeqs,
    maxNumBatchedTokens: c.maxNumBatchedTokens,
    enablePrefixCaching: c.enablePrefixCaching,
    enableChunkedPrefill: c.enableChunkedPrefill,
    preemptionMode: c.preemptionMode,
    speedupRatio: c.speedupRatio,
    decodeSpeedupRatio: c.decodeSpeedupRatio,
    timingModel: c.timingModel,
    prefillMs: c.prefillMs,
    decodeMs: c.decodeMs,
    seed: c.seed,
  };
}

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
