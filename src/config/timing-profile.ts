// Where a timing profile comes from: a built-in (`builtin:NAME`, generated from AIConfigurator's
// database by scripts/gen-timing-profiles.ts and carried in the binary), a JSON file, or Dynamo's
// planner profile data (a mocker-format .npz). One loader for every role; docs/timing.md.
import { readFileSync, statSync } from "node:fs";
import { resolve } from "node:path";
import { gpuBlocksFor, isParametric, PROFILE_SCHEMA, profileProblems, type TimingProfile } from "../protocol/timing-profile.ts";
import { readNpz } from "../lib/npz.ts";
import llama31_8bH200 from "./timing-profiles/llama-3.1-8b-h200-vllm0.24-tp1.json";
import qwen3_30bA3bH200 from "./timing-profiles/qwen3-30b-a3b-h200-vllm0.24-tp1.json";
import qwen3_32bH100 from "./timing-profiles/qwen3-32b-h100-vllm0.24-tp2.json";
import qwen3_32bH200 from "./timing-profiles/qwen3-32b-h200-vllm0.24-tp2.json";
import qwen3_8bH100 from "./timing-profiles/qwen3-8b-h100-vllm0.24-tp1.json";
import qwen3_8bH200 from "./timing-profiles/qwen3-8b-h200-vllm0.24-tp1.json";
import type { Candidate } from "./load.ts";

const BUILTIN_PREFIX = "builtin:";

const BUILTINS: Record<string, unknown> = Object.fromEntries(
  [llama31_8bH200, qwen3_8bH200, qwen3_8bH100, qwen3_32bH200, qwen3_32bH100, qwen3_30bA3bH200].map((p) => [p.name, p]),
);

export const BUILTIN_TIMING_PROFILES = Object.keys(BUILTINS).map((n) => `${BUILTIN_PREFIX}${n}`);

/** Arrays a mocker-format .npz holds (Dynamo's mocker reads these names). */
const NPZ_ARRAYS = ["prefill_isl", "prefill_ttft_ms", "decode_active_kv_tokens", "decode_context_length", "decode_itl"] as const;

const cache = new Map<string, TimingProfile>();

/**
 * The profile `source` names, validated: `builtin:NAME`, a JSON profile, or (planner: true) a
 * mocker-format .npz. Throws an Error whose message names the source and every problem.
 */
export function loadTimingProfile(source: string, planner = false): TimingProfile {
  const key = `${planner ? "npz" : "json"}:${source}`;
  const hit = cache.get(key);
  if (hit) return hit;
  const profile = planner ? fromPlannerData(source) : fromProfileSource(source);
  const problems = profileProblems(profile);
  if (problems.length > 0) throw new Error(`${source}: ${problems.join("; ")}`);
  cache.set(key, profile as TimingProfile);
  return profile as TimingProfile;
}

function fromProfileSource(source: string): unknown {
  if (source.startsWith(BUILTIN_PREFIX)) {
    const p = BUILTINS[source.slice(BUILTIN_PREFIX.length)];
    if (p === undefined) throw new Error(`no built-in timing profile ${source}; built in: ${BUILTIN_TIMING_PROFILES.join(", ")}`);
    return p;
  }
  let text: string;
  try {
    text = readFileSync(source, "utf8");
  } catch (e) {
    throw new Error(`${source}: cannot read it (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
  }
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new Error(`${source}: not JSON (${(e as Error).message})`);
  }
}

/** Dynamo's planner profile data as a profile: prefill by total new tokens, decode by summed context × mean context. */
function fromPlannerData(source: string): unknown {
  let bytes: Uint8Array;
  try {
    if (statSync(source).isDirectory()) {
      throw new Error(
        "is a profiler results directory; convert it to the mocker's .npz first with Dynamo's converter (python -m dynamo.mocker.utils.planner_profiler_perf_data_converter), as Dynamo's mocker does at start",
      );
    }
    bytes = readFileSync(source);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    throw new Error(`${source}: ${code ? `cannot read it (${code})` : (e as Error).message}`);
  }
  let arrays;
  try {
    arrays = readNpz(bytes);
  } catch (e) {
    throw new Error(`${source}: ${(e as Error).message}`);
  }
  const missing = NPZ_ARRAYS.filter((n) => !arrays.has(n));
  if (missing.length > 0) throw new Error(`${source}: missing array${missing.length > 1 ? "s" : ""} ${missing.join(", ")} (a mocker-format .npz holds ${NPZ_ARRAYS.join(", ")})`);
  const a = (n: (typeof NPZ_ARRAYS)[number]) => arrays.get(n)!;
  const itl = a("decode_itl");
  const rows = a("decode_active_kv_tokens").data.length;
  const cols = a("decode_context_length").data.length;
  if (itl.shape.length !== 2 || itl.shape[0] !== rows || itl.shape[1] !== cols) {
    throw new Error(`${source}: decode_itl has shape ${JSON.stringify(itl.shape)}, expected [${rows}, ${cols}] (decode_active_kv_tokens × decode_context_length)`);
  }
  if (a("prefill_ttft_ms").data.length !== a("prefill_isl").data.length) {
    throw new Error(`${source}: prefill_ttft_ms holds ${a("prefill_ttft_ms").data.length} values, prefill_isl ${a("prefill_isl").data.length}`);
  }
  const list = (n: (typeof NPZ_ARRAYS)[number]) => Array.from(a(n).data);
  return {
    schema: PROFILE_SCHEMA,
    name: source,
    provenance: { source: `Dynamo planner profile data (${source})`, system: "not stated", framework: "not stated", frameworkVersion: "not stated", model: "not stated", licence: "not stated" },
    interpolation: "bilinear",
    prefill: { tokens: list("prefill_isl"), context: [0], ms: list("prefill_ttft_ms").map((v) => [v]) },
    decode: { x: "activeKvTokens", activeKvTokens: list("decode_active_kv_tokens"), context: list("decode_context_length"), ms: Array.from({ length: rows }, (_, i) => Array.from(itl.data.subarray(i * cols, (i + 1) * cols))) },
  };
}

/** The engine options a timing profile touches (src/config/engine.ts). */
export interface TimingProfileOptions {
  timingModel: string;
  timingProfile?: string;
  plannerProfileData?: string;
  timingExtrapolate: boolean;
  gpuMemoryUtilization?: number;
  numGpuBlocksOverride: number;
  kvBytesPerToken: number;
  blockSize: number;
  maxNumSeqs: number;
  maxNumBatchedTokens: number;
}

/** vLLM's --gpu-memory-utilization default. */
export const DEFAULT_GPU_MEMORY_UTILIZATION = 0.9;

/**
 * A profile as the engine options see it: it implies --timing-model profile, and its KV geometry
 * gives --num-gpu-blocks-override (from --gpu-memory-utilization) and --kv-bytes-per-token where
 * no input set them (an explicit flag > the profile > the built-in default).
 */
export function timingProfileOverlay(c: TimingProfileOptions, problems: string[], given: ReadonlySet<string>): Map<string, Candidate> {
  const out = new Map<string, Candidate>();
  if (c.timingProfile !== undefined && c.plannerProfileData !== undefined) {
    problems.push("--timing-profile and --planner-profile-data both name a timing profile; give one");
    return out;
  }
  const source = c.timingProfile ?? c.plannerProfileData;
  const flag = c.timingProfile !== undefined ? "--timing-profile" : "--planner-profile-data";
  if (source === undefined) {
    if (c.timingModel === "profile") problems.push("--timing-model profile: needs --timing-profile FILE|builtin:NAME or --planner-profile-data FILE");
    if (c.gpuMemoryUtilization !== undefined) problems.push("--gpu-memory-utilization: sizes the GPU tier from a timing profile's KV geometry; give --timing-profile, or --num-gpu-blocks-override");
    return out;
  }
  if (given.has("timingModel") && c.timingModel !== "profile") {
    problems.push(`${flag}: times steps from a profile (--timing-model profile), but --timing-model is ${c.timingModel}; drop one of the two`);
    return out;
  }
  let profile: TimingProfile;
  try {
    profile = loadTimingProfile(source, c.plannerProfileData !== undefined);
  } catch (e) {
    problems.push(`${flag}: ${(e as Error).message}`);
    return out;
  }
  const label = `${flag} ${source}`;
  out.set("timingModel", { value: "profile", label });
  // A file named relative to here stays found by the roles up starts elsewhere.
  if (!source.startsWith(BUILTIN_PREFIX)) out.set(c.timingProfile !== undefined ? "timingProfile" : "plannerProfileData", { value: resolve(source), label });
  const kv = profile.kv;
  if (kv === undefined) {
    if (c.gpuMemoryUtilization !== undefined) problems.push(`--gpu-memory-utilization: ${source} carries no KV geometry to size the GPU tier from; give --num-gpu-blocks-override`);
  } else {
    if (!given.has("kvBytesPerToken")) out.set("kvBytesPerToken", { value: kv.kvBytesPerToken, label });
    if (!given.has("numGpuBlocksOverride")) {
      const utilization = c.gpuMemoryUtilization ?? DEFAULT_GPU_MEMORY_UTILIZATION;
      const perToken = given.has("kvBytesPerToken") ? c.kvBytesPerToken : kv.kvBytesPerToken;
      const blocks = gpuBlocksFor({ ...kv, kvBytesPerToken: perToken }, utilization, c.blockSize);
      if (blocks === undefined) problems.push(`--gpu-memory-utilization: ${utilization} of ${kv.gpuMemoryBytes} bytes leaves no room for KV after ${kv.nonKvBytes} bytes of weights and runtime (${source})`);
      else out.set("numGpuBlocksOverride", { value: blocks, label: `${label} at --gpu-memory-utilization ${utilization}` });
    }
  }
  // Planner data is extrapolated as Dynamo's mocker does (engine-config-from-options.ts).
  if (!c.timingExtrapolate && c.plannerProfileData === undefined) problems.push(...rangeProblems(profile, c, source));
  return out;
}

/** Engine limits the profile's tables do not reach (each step could ask past them). */
function rangeProblems(p: TimingProfile, c: TimingProfileOptions, source: string): string[] {
  const out: string[] = [];
  if (isParametric(p)) return out; // a linear model answers everywhere; its observed range is in the file
  const lastTokens = p.prefill.tokens[p.prefill.tokens.length - 1]!;
  if (c.maxNumBatchedTokens > lastTokens) {
    out.push(`--max-num-batched-tokens: ${c.maxNumBatchedTokens} is past ${source}'s prefill.tokens (last ${lastTokens}); lower it, or give --timing-extrapolate`);
  }
  if (p.decode.x === "batch") {
    const lastBatch = p.decode.batch[p.decode.batch.length - 1]!;
    if (c.maxNumSeqs > lastBatch) out.push(`--max-num-seqs: ${c.maxNumSeqs} is past ${source}'s decode.batch (last ${lastBatch}); lower it, or give --timing-extrapolate`);
  }
  return out;
}
