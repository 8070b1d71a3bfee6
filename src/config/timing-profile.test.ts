import { describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sampleProfile } from "../../test/timing-profile-kit.ts";
import { profileProblems, type TablesProfile } from "../protocol/timing-profile.ts";
import { ConfigError } from "../lib/errors.ts";
import { loadConfig } from "./load.ts";
import { replayOptions, replayProblems, type ReplayConfig } from "./replay.ts";
import { BUILTIN_TIMING_PROFILES, loadTimingProfile, timingProfileOverlay } from "./timing-profile.ts";

const FIXTURES = join(import.meta.dir, "../../test/fixtures/planner-profile");
const load = (argv: string[]) => loadConfig(replayOptions, { argv, readFile: () => "" }, (c) => replayProblems(c as ReplayConfig), { overlay: timingProfileOverlay }).config as ReplayConfig;
const problemsOf = (argv: string[]) => {
  try {
    load(argv);
  } catch (e) {
    if (e instanceof ConfigError) return e.problems;
    throw e;
  }
  return [];
};
const QWEN32 = "builtin:qwen3-32b-h200-vllm0.24-tp2";

describe("built-in timing profiles", () => {
  test("at least six, each valid, named model-gpu-framework-tp after its provenance", () => {
    expect(BUILTIN_TIMING_PROFILES.length).toBeGreaterThanOrEqual(6);
    for (const name of BUILTIN_TIMING_PROFILES) {
      const p = loadTimingProfile(name);
      expect(profileProblems(p)).toEqual([]);
      const gpu = p.provenance.system.replace(/_sxm$/, "");
      const version = p.provenance.frameworkVersion.split(".").slice(0, 2).join(".");
      expect(name).toBe(`builtin:${p.provenance.model.split("/")[1]!.toLowerCase().replace("meta-llama-", "llama-")}-${gpu}-vllm${version}-tp${p.provenance.tensorParallelSize}`);
      expect(p.kv!.kvBytesPerToken).toBeGreaterThan(0);
    }
    expect(BUILTIN_TIMING_PROFILES.some((n) => n.includes("a3b"))).toBe(true); // a MoE
  });

  test("a name that is not built in lists those that are", () => {
    expect(() => loadTimingProfile("builtin:qwen3-32b-h200-vllm0.19-tp2")).toThrow(`no built-in timing profile builtin:qwen3-32b-h200-vllm0.19-tp2; built in: ${BUILTIN_TIMING_PROFILES.join(", ")}`);
  });
});

describe("--timing-profile in the engine options", () => {
  test("implies the profile model; its KV geometry sizes G1 from --gpu-memory-utilization (default 0.9) and KV bytes per token", () => {
    const kv = loadTimingProfile(QWEN32).kv!;
    const c = load(["--timing-profile", QWEN32]);
    expect(c.timingModel).toBe("profile");
    expect(c.kvBytesPerToken).toBe(kv.kvBytesPerToken);
    expect(c.numGpuBlocksOverride).toBe(Math.floor((kv.gpuMemoryBytes * 0.9 - kv.nonKvBytes) / (kv.kvBytesPerToken * 64)));
    expect(load(["--timing-profile", QWEN32, "--gpu-memory-utilization", "0.5"]).numGpuBlocksOverride).toBe(Math.floor((kv.gpuMemoryBytes * 0.5 - kv.nonKvBytes) / (kv.kvBytesPerToken * 64)));
  });

  test("an explicit flag wins over the profile, the profile over the built-in default", () => {
    const c = load(["--timing-profile", QWEN32, "--num-gpu-blocks-override", "100", "--kv-bytes-per-token", "7"]);
    expect([c.numGpuBlocksOverride, c.kvBytesPerToken]).toEqual([100, 7]);
    expect(load([]).numGpuBlocksOverride).toBe(16384);
  });

  test("contradictions and limits past the tables are refused naming the flag", () => {
    expect(problemsOf(["--timing-profile", QWEN32, "--timing-model", "fixed"])).toEqual([
      `--timing-profile: times steps from a profile (--timing-model profile), but --timing-model is fixed; drop one of the two`,
    ]);
    expect(problemsOf(["--timing-model", "profile"])[0]).toContain("--timing-model profile: needs --timing-profile");
    expect(problemsOf(["--gpu-memory-utilization", "0.8"])[0]).toContain("--gpu-memory-utilization: sizes the GPU tier from a timing profile");
    expect(problemsOf(["--timing-profile", QWEN32, "--max-num-seqs", "1024"])).toEqual([`--max-num-seqs: 1024 is past ${QWEN32}'s decode.batch (last 512); lower it, or give --timing-extrapolate`]);
    expect(load(["--timing-profile", QWEN32, "--max-num-seqs", "1024", "--timing-extrapolate"]).maxNumSeqs).toBe(1024);
    expect(problemsOf(["--timing-profile", QWEN32, "--gpu-memory-utilization", "0.2"])[0]).toContain("leaves no room for KV");
  });

  test("a JSON profile file: loaded, or refused naming the file and the field", () => {
    const dir = mkdtempSync(join(tmpdir(), "kvcr-profile-"));
    try {
      const good = join(dir, "good.json");
      writeFileSync(good, JSON.stringify(sampleProfile()));
      const c = load(["--timing-profile", good, "--max-num-seqs", "16", "--max-num-batched-tokens", "1000"]);
      expect([c.timingModel, c.timingProfile]).toEqual(["profile", good]);
      const bad = join(dir, "bad.json");
      const p = sampleProfile() as unknown as Record<string, any>;
      delete p.decode.ms;
      writeFileSync(bad, JSON.stringify(p));
      expect(problemsOf(["--timing-profile", bad])).toEqual([`--timing-profile: ${bad}: decode.ms: got nothing, expected 3 rows (one per decode.batch)`]);
      writeFileSync(bad, "{");
      expect(problemsOf(["--timing-profile", bad])[0]).toStartWith(`--timing-profile: ${bad}: not JSON`);
      expect(problemsOf(["--timing-profile", join(dir, "none.json")])).toEqual([`--timing-profile: ${join(dir, "none.json")}: cannot read it (ENOENT)`]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("--planner-profile-data (Dynamo's mocker-format .npz, as numpy writes it)", () => {
  test("stored and deflated archives read alike: prefill by new tokens, decode by summed context × mean context", () => {
    for (const file of ["perf_data.npz", "perf_data_compressed.npz"]) {
      const p = loadTimingProfile(join(FIXTURES, file), true) as TablesProfile;
      expect(p.prefill.tokens).toEqual([100, 2123, 4146, 6169, 8192]);
      expect(p.prefill.ms.map((r) => r[0])).toEqual([12, 52.46, 92.92, 133.38, 173.84].map((v) => expect.closeTo(v, 9)));
      expect(p.decode.x).toBe("activeKvTokens");
      expect(p.decode.ms).toHaveLength(4);
      expect(p.decode.ms[3]![2]).toBeCloseTo(17, 9);
    }
    const c = load(["--planner-profile-data", join(FIXTURES, "perf_data.npz"), "--max-num-batched-tokens", "8192"]);
    expect(c.timingModel).toBe("profile");
    expect(c.numGpuBlocksOverride).toBe(16384); // the data carries no KV geometry
  });

  test("missing arrays, a profiler directory and both sources at once are refused with what to do", () => {
    expect(() => loadTimingProfile(join(FIXTURES, "missing_decode.npz"), true)).toThrow("missing arrays decode_active_kv_tokens, decode_context_length, decode_itl");
    expect(() => loadTimingProfile(FIXTURES, true)).toThrow("is a profiler results directory; convert it to the mocker's .npz first with Dynamo's converter");
    expect(() => loadTimingProfile(join(FIXTURES, "../planner-profile/perf_data.npz.absent"), true)).toThrow("cannot read it (ENOENT)");
    expect(problemsOf(["--planner-profile-data", join(FIXTURES, "perf_data.npz"), "--timing-profile", QWEN32])).toEqual(["--timing-profile and --planner-profile-data both name a timing profile; give one"]);
  });
});
