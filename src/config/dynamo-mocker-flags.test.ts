// Dynamo's mocker flags under `mocker --runtime dynamo`, against the flags Dynamo 1.6.1's own
// `python -m dynamo.mocker --help` lists (test/fixtures/dynamo-1.6.1/help): every one is either
// kvcr-mock's own (same name, Dynamo's meaning) or handled by the table (translated, ignored with
// a warning, or refused with the reason), and a Dynamo launch line loads.
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { FIXTURES_DIR, thrownBy } from "../../test/harness.ts";
import { ConfigError } from "../lib/errors.ts";
import { commonOptions } from "./common.ts";
import { asksForDynamo, DYNAMO_ONLY_FLAGS, translateDynamoMockerFlags } from "./dynamo-mocker-flags.ts";
import { dynamoOverlay } from "./dynamo-runtime.ts";
import { loadConfig } from "./load.ts";
import { extraEngineArgsOverlay, mockerOptions, mockerProblems } from "./mocker.ts";
import { flagName } from "./options.ts";

const dynamoHelp = readFileSync(join(FIXTURES_DIR, "dynamo-1.6.1/help/dynamo.mocker.txt"), "utf8").replace(/\s+/g, " ");
const dynamoFlags = readFileSync(join(FIXTURES_DIR, "dynamo-1.6.1/help/dynamo.mocker.flags"), "utf8").split("\n").filter(Boolean);
/** Pieces of flags the help text wraps mid-name ("--router-host-cache-hit-" + "weight"), and the two every command has. */
const NOT_FLAGS = new Set(["--max-", "--no-", "--no-router-", "--router-", "--track-", "--router-host-cache-hit-", "--router-policy-", "--help", "--version"]);

const table = { ...mockerOptions, ...commonOptions };
const load = (argv: string[], read?: (p: string) => string) => {
  const t = translateDynamoMockerFlags(argv);
  if (t.problems.length > 0) throw new ConfigError(t.problems);
  return { config: loadConfig(table, { argv: t.argv, env: {} }, mockerProblems, { overlay: (c, p, given) => new Map([...extraEngineArgsOverlay(c, p, read), ...dynamoOverlay(c, given, {})]) }).config, warnings: t.warnings };
};

describe("Dynamo's mocker flags under --runtime dynamo", () => {
  test("the engine's defaults are the installed Dynamo mocker's, as its --help states them", () => {
    /** The text of a flag's help entry, up to the next flag entry. */
    const entry = (flag: string) => new RegExp(`  ${flag} [A-Z_]*\\s*(.*?)(?= --[a-z])`).exec(dynamoHelp.replace(/ (--[a-z-]+)/g, "  $1"))?.[1] ?? "";
    const { config } = load(["--runtime", "dynamo", "--model-path", "/m"]);
    expect(entry("--block-size")).toContain("vLLM 64");
    expect(config.blockSize).toBe(64);
    expect(entry("--num-gpu-blocks-override")).toContain("non-AIS mocker uses 16384");
    expect(config.numGpuBlocksOverride).toBe(16384);
    const stated = (flag: string) => /\(default: ([^)]+)\)/.exec(entry(flag))?.[1];
    expect([stated("--max-num-seqs"), stated("--max-num-batched-tokens"), stated("--speedup-ratio"), stated("--decode-speedup-ratio"), stated("--data-parallel-size")]).toEqual(["256", "8192", "1.0", "1.0", "1"]);
    expect([config.maxNumSeqs, config.maxNumBatchedTokens, config.speedupRatio, config.decodeSpeedupRatio, config.dataParallelSize]).toEqual([256, 8192, 1, 1, 1]);
    expect([stated("--enable-prefix-caching"), stated("--enable-chunked-prefill")]).toEqual(["True", "True"]);
    expect([config.enablePrefixCaching, config.enableChunkedPrefill]).toEqual([true, true]);
    expect(entry("--preemption-mode")).toContain("'lifo' (default)");
    expect(config.preemptionMode).toBe("lifo");
    // Dynamo's mocker times steps with its polynomials unless given profile data.
    expect(entry("--planner-profile-data")).toContain("uses hardcoded polynomials");
    expect(config.timingModel).toBe("polynomial");
  });

  test("every flag of Dynamo 1.6.1's mocker is kvcr-mock's own or handled by the table", () => {
    const ours = new Set(Object.entries(table).flatMap(([key, spec]) => {
      const f = flagName(key, spec);
      return spec.kind === "bool" ? [`--${f}`, `--no-${f}`] : [`--${f}`];
    }));
    const unhandled = dynamoFlags.filter((f) => !NOT_FLAGS.has(f) && !ours.has(f) && DYNAMO_ONLY_FLAGS[f.slice(2)] === undefined);
    expect(unhandled).toEqual([]);
    // The table holds nothing Dynamo's mocker does not have (a typo would never match).
    const listed = new Set(dynamoFlags);
    expect(Object.keys(DYNAMO_ONLY_FLAGS).filter((f) => !listed.has(`--${f}`))).toEqual([]);
    // docs/dynamo.md has a row for each.
    const doc = readFileSync(join(import.meta.dir, "../../docs/dynamo.md"), "utf8");
    expect(dynamoFlags.filter((f) => !NOT_FLAGS.has(f) && !doc.includes(`| \`${f}\` |`))).toEqual([]);
  });

  test("a Dynamo launch line loads: aliases translated, settings kvcr-mock cannot act on accepted with a warning each", () => {
    const { config, warnings } = load([
      "--runtime", "dynamo", "--model-path", "/m", "--num-workers", "4", "--speedup-ratio", "10", "--block-size", "16", "--is-prefill-worker",
      "--engine-type", "vllm", "--router-mode", "kv", "--no-load-aware", "--router-temperature=0.5", "--gpu-memory-utilization", "0.8", "--response-plane", "tcp",
    ]);
    expect(config).toMatchObject({ runtime: "dynamo", numWorkers: 4, speedupRatio: 10, blockSize: 16, disaggregationMode: "prefill" });
    expect(warnings.map((w) => w.split(":")[0])).toEqual(["--engine-type vllm", "--router-mode kv", "--no-load-aware", "--router-temperature 0.5", "--gpu-memory-utilization 0.8", "--response-plane tcp"]);
    expect(warnings[1]).toContain("a router setting Dynamo's mocker advertises in its card");
  });

  test("what kvcr-mock cannot do is refused with the reason; a valued flag without its value is named", () => {
    const problems = (...argv: string[]) => [...thrownBy(ConfigError, () => load(["--runtime", "dynamo", "--model-path", "/m", ...argv])).problems];
    expect(problems("--engine-type", "sglang")).toEqual(["--engine-type sglang: Dynamo's mocker flag, refused: kvcr-mock mocks vLLM's engine only (--engine-type vllm)"]);
    expect(problems("--ais-perf-model")[0]).toStartWith("--ais-perf-model: Dynamo's mocker flag, refused: it times steps with AISimulate's perf model");
    expect(problems("--response-plane", "quic")[0]).toContain("the QUIC response plane is not supported");
    expect(problems("--router-mode")).toEqual(["--router-mode: needs a value"]);
    // The table applies only under --runtime dynamo (cli/mocker.ts asks first).
    expect([asksForDynamo(["--runtime", "dynamo"]), asksForDynamo(["--runtime=dynamo"]), asksForDynamo(["dynamo", "--runtime", "kvcr"]), asksForDynamo(["--model-path", "dynamo"])]).toEqual([true, true, false, false]);
  });

  test("Dynamo's flat --extra-engine-args file, and a prefill worker's --kv-transfer-bandwidth as Dynamo takes it", () => {
    const files: Record<string, string> = { "/flat.json": JSON.stringify({ speedup_ratio: 10, num_gpu_blocks: 512, num_workers: 3 }), "/bad.json": JSON.stringify({ watermark: 0.01 }) };
    const { config } = load(["--runtime", "dynamo", "--model-path", "/m", "--extra-engine-args", "/flat.json"], (p) => files[p]!);
    expect(config).toMatchObject({ speedupRatio: 10, numGpuBlocksOverride: 512, numWorkers: 3 });
    const bad = [...thrownBy(ConfigError, () => load(["--runtime", "dynamo", "--model-path", "/m", "--extra-engine-args", "/bad.json"], (p) => files[p]!)).problems];
    expect(bad).toEqual(["watermark (in /bad.json): unknown key (a flat file, as Dynamo's mocker reads, takes engine and mocker keys)"]);
    expect(load(["--runtime", "dynamo", "--model-path", "/m", "--disaggregation-mode", "prefill", "--kv-transfer-bandwidth", "32"]).config.kvTransferBandwidth).toBe(32);
    // kvcr-mock's own runtime keeps its rule: the decode worker times the pull.
    expect(() => load(["--disaggregation-mode", "prefill", "--kv-transfer-bandwidth", "32"])).toThrow("--kv-transfer-bandwidth: a decode worker's setting");
  });
});
