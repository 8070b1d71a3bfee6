// Configuration of one engine (one worker rank) and its defaults. Key names match the engine
// option table of src/config/engine.ts so a resolved config maps straight onto this.
import type { PreemptionMode } from "../scheduler/scheduler.ts";
import type { TimingModelKind } from "../timing/timing-model.ts";
import type { TimingProfile } from "../../protocol/timing-profile.ts";

export interface EngineConfig {
  /** Tokens per KV block. */
  blockSize: number;
  /** G1 (device) blocks. */
  numGpuBlocks: number;
  /** G2 (host) blocks; 0 = no host tier. */
  numHostBlocks: number;
  /** GB/s; 0 = instant. */
  hostOffloadD2hBandwidthGbps: number;
  hostOffloadH2dBandwidthGbps: number;
  /** Also offload blocks completed by generated tokens (vLLM's and Dynamo's default: prompt blocks only). */
  hostOffloadDecodeBlocks: boolean;
  /** Sizes host transfers: bytes per block = kvBytesPerToken × blockSize. */
  kvBytesPerToken: number;
  maxNumSeqs: number;
  maxNumBatchedTokens: number;
  enablePrefixCaching: boolean;
  enableChunkedPrefill: boolean;
  preemptionMode: PreemptionMode;
  speedupRatio: number;
  decodeSpeedupRatio: number;
  timingModel: TimingModelKind;
  prefillMs: number;
  decodeMs: number;
  /** Profile model: the measured tables (docs/timing.md). */
  timingProfile?: TimingProfile;
  /** Profile model: extrapolate past a table's last point (warned once) instead of refusing. */
  timingExtrapolate?: boolean;
  /** Seed of the output tokens. */
  seed: number;
  /** Output token ids are drawn from [firstOutputId, firstOutputId + vocabSize). */
  vocabSize: number;
  firstOutputId: number;
  /** Released blocks whose token ids stay recoverable for host stores (default 16,384). */
  releasedFifoBlocks: number;
  /** GB/s of a remote prefill's KV pull (decode side); 0 = instant. */
  kvTransferBandwidthGbps: number;
  /** What a pull's time counts: the whole prompt, or only the tokens this rank lacked. */
  kvTransferTimingMode: "full_prompt" | "destination_missing";
  /** Distinct LoRA adapters in one batch (vLLM's --max-loras). */
  maxLoras: number;
  /** LoRA adapters kept loaded, least recently used evicted (vLLM's --max-cpu-loras; 0 = maxLoras). */
  maxCpuLoras: number;
  /** Step time of loading one LoRA adapter, in ms (speedup applied). */
  loraLoadMs: number;
}

/** Most blocks a tier can address (int32 cell indices). */
export const MAX_TIER_BLOCKS = 2 ** 31 - 1;

export const DEFAULT_ENGINE_CONFIG: Readonly<EngineConfig> = Object.freeze({
  blockSize: 64,
  numGpuBlocks: 16_384,
  numHostBlocks: 0,
  hostOffloadD2hBandwidthGbps: 0,
  hostOffloadH2dBandwidthGbps: 0,
  hostOffloadDecodeBlocks: false,
  kvBytesPerToken: 131_072,
  maxNumSeqs: 256,
  maxNumBatchedTokens: 8192,
  enablePrefixCaching: true,
  enableChunkedPrefill: true,
  preemptionMode: "lifo",
  speedupRatio: 1,
  decodeSpeedupRatio: 1,
  timingModel: "polynomial",
  prefillMs: 20,
  decodeMs: 10,
  seed: 0,
  vocabSize: 32_000,
  firstOutputId: 0,
  releasedFifoBlocks: 16_384,
  kvTransferBandwidthGbps: 64,
  kvTransferTimingMode: "full_prompt",
  maxLoras: 1,
  maxCpuLoras: 0,
  loraLoadMs: 0,
});

/** Problems with a config, one line each (the process edge validates first; this guards core). */
export function engineConfigProblems(c: EngineConfig): string[] {
  const p: string[] = [];
  const posInt = (k: keyof EngineConfig) => {
    const v = c[k];
    if (typeof v !== "number" || !Number.isInteger(v) || v < 1) p.push(`${k}: got ${String(v)}, expected an integer ≥ 1`);
  };
  const nonNegInt = (k: keyof EngineConfig) => {
    const v = c[k];
    if (typeof v !== "number" || !Number.isInteger(v) || v < 0) p.push(`${k}: got ${String(v)}, expected an integer ≥ 0`);
  };
  const nonNeg = (k: keyof EngineConfig) => {
    const v = c[k];
    if (typeof v !== "number" || !Number.isFinite(v) || v < 0) p.push(`${k}: got ${String(v)}, expected a number ≥ 0`);
  };
  for (const k of ["blockSize", "numGpuBlocks", "maxNumSeqs", "maxNumBatchedTokens", "kvBytesPerToken", "vocabSize", "maxLoras"] as const) posInt(k);
  for (const k of ["numHostBlocks", "seed", "releasedFifoBlocks", "maxCpuLoras"] as const) nonNegInt(k);
  for (const k of ["hostOffloadD2hBandwidthGbps", "hostOffloadH2dBandwidthGbps", "kvTransferBandwidthGbps", "speedupRatio", "prefillMs", "decodeMs", "loraLoadMs"] as const) nonNeg(k);
  if (c.maxCpuLoras !== 0 && c.maxCpuLoras < c.maxLoras) p.push(`maxCpuLoras: got ${c.maxCpuLoras}, expected 0 or at least maxLoras (${c.maxLoras})`);
  if (!(c.decodeSpeedupRatio > 0) || !Number.isFinite(c.decodeSpeedupRatio)) p.push(`decodeSpeedupRatio: got ${c.decodeSpeedupRatio}, expected a number > 0`);
  if (c.preemptionMode !== "lifo" && c.preemptionMode !== "fifo") p.push(`preemptionMode: got ${String(c.preemptionMode)}, expected lifo or fifo`);
  if (c.kvTransferTimingMode !== "full_prompt" && c.kvTransferTimingMode !== "destination_missing") p.push(`kvTransferTimingMode: got ${String(c.kvTransferTimingMode)}, expected full_prompt or destination_missing`);
  if (c.timingModel !== "polynomial" && c.timingModel !== "fixed" && c.timingModel !== "profile") p.push(`timingModel: got ${String(c.timingModel)}, expected polynomial, fixed or profile`);
  if (c.timingModel === "profile") {
    // The process edge validates the profile itself (protocol/timing-profile.ts).
    if (c.timingProfile === undefined) p.push("timingProfile: the profile timing model needs a profile");
  } else if (c.timingProfile !== undefined) p.push(`timingProfile: given, but timingModel is ${c.timingModel}`);
  // Cells are int32 indices (LRU links hold cell + 1); the process edge caps the flags alike.
  for (const k of ["numGpuBlocks", "numHostBlocks"] as const) if (c[k] > MAX_TIER_BLOCKS) p.push(`${k}: got ${c[k]}, expected at most ${MAX_TIER_BLOCKS}`);
  if (c.numHostBlocks > 0 && !c.enablePrefixCaching) p.push("numHostBlocks: a host tier requires prefix caching");
  return p;
}
