// Resolved engine options (src/config/engine.ts) → one engine's config, for every role that
// builds engines (mocker, replay). The only renaming: --num-gpu-blocks-override → numGpuBlocks.
import type { EngineConfig } from "../../../core/engine/engine-config.ts";
import type { engineOptions } from "../../../config/engine.ts";
import type { ConfigOf } from "../../../config/options.ts";
import { loadTimingProfile } from "../../../config/timing-profile.ts";

type EngineOptionValues = ConfigOf<typeof engineOptions>;
type EngineKeys = Pick<EngineOptionValues, "blockSize" | "numGpuBlocksOverride" | "numHostBlocks" | "hostOffloadD2hBandwidthGbps" | "hostOffloadH2dBandwidthGbps" | "hostOffloadDecodeBlocks" | "kvBytesPerToken" | "maxNumSeqs" | "maxNumBatchedTokens" | "enablePrefixCaching" | "enableChunkedPrefill" | "preemptionMode" | "speedupRatio" | "decodeSpeedupRatio" | "timingModel" | "prefillMs" | "decodeMs" | "seed"> & Partial<Pick<EngineOptionValues, "timingProfile" | "plannerProfileData" | "timingExtrapolate">> & Partial<Pick<EngineOptionValues, "maxLoras" | "maxCpuLoras" | "loraLoadMs">>;

/** The profile the options name (the config loader validated it already), for the profile model. */
export function timingProfileOf(c: Pick<EngineKeys, "timingModel" | "timingProfile" | "plannerProfileData" | "timingExtrapolate">): Partial<EngineConfig> {
  if (c.timingModel !== "profile") return {};
  const planner = c.timingProfile === undefined;
  const source = c.timingProfile ?? c.plannerProfileData;
  if (source === undefined) return {};
  // Dynamo's mocker extrapolates its planner data's tables; so does the mock (warned once).
  return { timingProfile: loadTimingProfile(source, planner), timingExtrapolate: c.timingExtrapolate === true || planner };
}

/** The engine options as one engine's config (shared by any role that builds engines). */
export function engineConfigFrom(c: EngineKeys): Partial<EngineConfig> {
  return {
    blockSize: c.blockSize,
    numGpuBlocks: c.numGpuBlocksOverride,
    numHostBlocks: c.numHostBlocks,
    hostOffloadD2hBandwidthGbps: c.hostOffloadD2hBandwidthGbps,
    hostOffloadH2dBandwidthGbps: c.hostOffloadH2dBandwidthGbps,
    hostOffloadDecodeBlocks: c.hostOffloadDecodeBlocks,
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
    ...timingProfileOf(c),
    ...(c.maxLoras !== undefined ? { maxLoras: c.maxLoras } : {}),
    ...(c.maxCpuLoras !== undefined ? { maxCpuLoras: c.maxCpuLoras } : {}),
    ...(c.loraLoadMs !== undefined ? { loraLoadMs: c.loraLoadMs } : {}),
  };
}

