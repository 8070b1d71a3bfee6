// `kvcr-mock replay` options: the workload (a Mooncake trace or the synthetic
// shared-prefix generator), arrivals, workers and router, the engine options, and the report.
import { engineOptions, engineProblems } from "./engine.ts";
import { defineOptions, group, type ConfigOf } from "./options.ts";
import { ROUTER_MODES, routerModesHelp } from "../protocol/router-modes.ts";
import { routerTuningOptions } from "./router.ts";

export const workloadOptions = defineOptions({
  ...group("Workload", {
    trace: { kind: "string", nonEmpty: true, description: "Mooncake-style JSONL trace (timestamp, input_length, output_length, hash_ids), or a built-in one: builtin:mooncake-conversation, builtin:mooncake-synthetic; without it the synthetic shared-prefix workload runs" },
    traceBlockSize: { kind: "int", min: 1, default: 512, description: "Tokens each trace hash id stands for" },
    skipBadLines: { kind: "bool", default: false, description: "Replay the good lines of a trace with bad ones (otherwise stop before simulating)" },
    requests: { kind: "int", min: 1, description: "Synthetic: number of requests (default 100). Trace: replay only its first N requests" },
    numPrefixes: { kind: "int", min: 1, default: 10, description: "Synthetic: distinct shared prefixes" },
    prefixTokens: { kind: "int", min: 0, default: 2048, description: "Synthetic: tokens per shared prefix" },
    suffixTokens: { kind: "int", min: 0, default: 256, description: "Synthetic: unique tokens after the prefix" },
    outputTokens: { kind: "int", min: 1, default: 128, description: "Synthetic: output tokens per request" },
    seed: { kind: "int", min: 0, max: Number.MAX_SAFE_INTEGER, default: 0, description: "Seed of output tokens, synthetic prompts, random routing and Poisson arrivals" },
  }),
  ...group("Arrivals", {
    concurrency: { kind: "int", min: 1, description: "Closed loop: keep N requests in flight (ignores timestamps)" },
    requestRate: { kind: "number", min: 0.000001, description: "Poisson arrivals at R requests per second (ignores timestamps)" },
    arrivalSpeedupRatio: { kind: "number", min: 0.000001, default: 1, description: "Divides trace timestamps (2 = arrivals twice as dense)" },
    traceSpeedup: { kind: "number", min: 0.000001, description: "Same as --arrival-speedup-ratio; wins when both are given" },
  }),
});

/**
 * The workload options as replay and bench list them. Both also spread engineOptions, whose
 * --seed (the same key, spread later) is the declaration that wins, so --seed is listed with
 * the engine's options rather than here.
 */
export const { seed: _enginesSeed, ...workloadFlags } = workloadOptions;

export const reportOptions = group("Report", {
  outputJson: { kind: "string", nonEmpty: true, description: "Also write the report as JSON to FILE (- prints JSON instead of the table)" },
});

export const replayRouterOptions = group("Workers and router", {
  numWorkers: { kind: "int", min: 1, max: 100_000, default: 1, description: "Simulated workers (each with --data-parallel-size ranks)" },
  routerMode: {
    kind: "enum",
    choices: ROUTER_MODES,
    default: "kv",
    description: `How each request picks its (worker, rank): ${routerModesHelp(ROUTER_MODES)} (oracle in replay only)`,
  },
  ...routerTuningOptions,
  loraReplicas: { kind: "int", min: 1, max: 100_000, description: "Workers holding each LoRA adapter a trace row names (lora_name), placed by rendezvous hashing; requests for it go only to them (default: every worker holds every adapter)" },
});

export const replayOptions = defineOptions({
  ...workloadFlags,
  ...replayRouterOptions,
  ...engineOptions,
  ...reportOptions,
  ...group("Report", {
    regret: {
      kind: "bool",
      default: false,
      description: "Judge every routing decision against the engines' true cache and load (the report's regret); off by default: it keeps a second index of every KV event, about a third more replay time (--router-mode oracle keeps it anyway)",
    },
  }),
});

export type ReplayConfig = ConfigOf<typeof replayOptions>;

export function replayProblems(c: ReplayConfig): string[] {
  const problems = engineProblems(c);
  if (c.concurrency !== undefined && c.requestRate !== undefined) problems.push("--concurrency and --request-rate: choose one arrival mode");
  if (c.trace === undefined && c.prefixTokens + c.suffixTokens < 1) problems.push("--prefix-tokens + --suffix-tokens: a synthetic prompt needs at least 1 token");
  return problems;
}
