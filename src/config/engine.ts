// Engine options (dynamo.mocker / vLLM spellings), shared by `mocker` and `replay`.
// Defaults are per (worker, rank) and mirror vLLM's and Dynamo's mocker's.
import { defineOptions, group } from "./options.ts";

/**
 * Most blocks per tier and rank: block cells are int32 indices (the LRU lists store cell + 1 in
 * Int32Arrays), so 2^31 − 1 is the largest count they can address. Tier storage grows with the
 * blocks actually held, so a large value costs memory only as blocks fill it (a G2 block in use
 * takes ~100 bytes plus its token ids, 4 × block size bytes).
 */
export const MAX_BLOCKS_PER_TIER = 2 ** 31 - 1;

/** Blocks, tiers and host transfers. */
export const kvCacheOptions = group("KV cache tiers", {
  blockSize: { kind: "int", min: 1, max: 65536, default: 64, description: "Tokens per KV block" },
  numGpuBlocksOverride: { kind: "int", min: 1, max: MAX_BLOCKS_PER_TIER, default: 16384, description: "G1 (GPU) KV blocks per rank" },
  numHostBlocks: { kind: "int", min: 0, max: MAX_BLOCKS_PER_TIER, default: 0, description: "G2 (host) KV blocks per rank; 0 = no host tier (memory grows with blocks stored)" },
  hostOffloadD2hBandwidthGbps: { kind: "number", min: 0, default: 0, description: "Device-to-host copy bandwidth in GB/s; 0 = instant" },
  hostOffloadH2dBandwidthGbps: { kind: "number", min: 0, default: 0, description: "Host-to-device load bandwidth in GB/s; 0 = instant" },
  hostOffloadDecodeBlocks: { kind: "bool", default: false, description: "Also offload blocks completed by generated tokens to G2 (vLLM and Dynamo offload prompt blocks only)" },
  hostKvEventsMedium: {
    kind: "enum",
    choices: ["CPU_PINNED", "CPU"],
    default: "CPU_PINNED",
    description: "Medium of G2 events: CPU_PINNED (Dynamo's mocker) or CPU (vLLM's OffloadingConnector); replay accepts it so one config serves both",
  },
  kvBytesPerToken: {
    kind: "int",
    min: 1,
    default: 131072,
    description: "KV bytes per token, sizes host transfers (default: Llama-3-8B, 2 × 32 layers × 8 heads × 128 × 2 B)",
  },
});

/** Scheduling and timing. */
export const engineCoreOptions = group("Engine", {
  maxNumSeqs: { kind: "int", min: 1, default: 256, description: "Most sequences running at once per rank" },
  maxNumBatchedTokens: { kind: "int", min: 1, default: 8192, description: "Token budget per engine step" },
  enablePrefixCaching: { kind: "bool", default: true, description: "Reuse cached prefix blocks" },
  enableChunkedPrefill: { kind: "bool", default: true, description: "Prefill long prompts over several steps" },
  preemptionMode: { kind: "enum", choices: ["lifo", "fifo"], default: "lifo", description: "Which running request to preempt when blocks run out" },
  speedupRatio: { kind: "number", min: 0, default: 1, description: "Divides all simulated times; 0 = as fast as possible" },
  decodeSpeedupRatio: { kind: "number", min: 0.000001, default: 1, description: "Further divides decode time" },
  timingModel: { kind: "enum", choices: ["polynomial", "fixed", "profile"], default: "polynomial", description: "Step-time model (profile: set by --timing-profile or --planner-profile-data)" },
  timingProfile: { kind: "string", nonEmpty: true, description: "Step times from a measured profile: a JSON file or builtin:NAME (docs/timing.md); implies --timing-model profile" },
  plannerProfileData: { kind: "string", nonEmpty: true, description: "Step times from Dynamo's planner profile data, a mocker-format .npz (as Dynamo's mocker reads it); implies --timing-model profile" },
  timingExtrapolate: { kind: "bool", default: false, description: "Past a profile's last point, extrapolate linearly (warned once) instead of refusing" },
  gpuMemoryUtilization: { kind: "number", min: 0.000001, max: 1, description: "With a profile's KV geometry: the GPU memory fraction vLLM gives the model, sizing the GPU tier (default 0.9; --num-gpu-blocks-override wins)" },
  prefillMs: { kind: "number", min: 0, default: 20, description: "Prefill time per step with --timing-model fixed" },
  decodeMs: { kind: "number", min: 0, default: 10, description: "Decode time per step with --timing-model fixed" },
  dataParallelSize: { kind: "int", min: 1, max: 1024, default: 1, description: "Data-parallel ranks per worker" },
  seed: { kind: "int", min: 0, max: Number.MAX_SAFE_INTEGER, default: 0, description: "Seed for output tokens (same seed, same run)" },
});

/** LoRA adapters per rank: vLLM's batch budget and adapter cache (docs/commands.md, LoRA adapters). */
export const loraBudgetOptions = group("LoRA adapters", {
  maxLoras: { kind: "int", min: 1, max: 1024, default: 1, description: "Most distinct LoRA adapters in one batch; a request for another waits (vLLM's --max-loras)" },
  maxCpuLoras: { kind: "int", min: 1, max: 65536, description: "LoRA adapters kept loaded per rank, the least recently used idle one evicted (default --max-loras; vLLM's --max-cpu-loras)" },
  loraLoadMs: { kind: "number", min: 0, default: 0, description: "Step time of loading a LoRA adapter that is not loaded, in ms" },
});

export const engineOptions = defineOptions({ ...kvCacheOptions, ...engineCoreOptions, ...loraBudgetOptions });

/** The cross-field rules of the engine options (the host tier needs prefix caching; vLLM's LoRA cache rule). */
export function engineProblems(c: { numHostBlocks: number; enablePrefixCaching: boolean; maxLoras?: number; maxCpuLoras?: number }): string[] {
  const problems: string[] = [];
  if (c.numHostBlocks > 0 && !c.enablePrefixCaching) problems.push("--num-host-blocks: a host tier requires prefix caching (drop --no-enable-prefix-caching)");
  if (c.maxCpuLoras !== undefined && c.maxLoras !== undefined && c.maxCpuLoras < c.maxLoras) problems.push(`--max-cpu-loras: max_cpu_loras (${c.maxCpuLoras}) must be >= max_loras (${c.maxLoras})`);
  return problems;
}
