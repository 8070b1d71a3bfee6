// `kvcr-mock replay` options: the workload (a Mooncake trace or the synthetic
// shared-prefix generator), arrivals, workers and router, the engine options, and the report.
import { engineOptions, engineProblems } from "./engine.ts";
import { defineOptions, group, type ConfigOf } from "./options.ts";
import { ROUTER_MODES, routerModesHelp } from "../protocol/router-modes.ts";
import { replayLayoutOptions, replayLayoutProblems } from "./replay-layouts.ts";
import { routerTuningOptions } from "./router.ts";
import { TRACE_FORMATS } from "../protocol/trace-formats.ts";

export const workloadOptions = defineOptions({
  ...group("Workload", {
    trace: { kind: "string", nonEmpty: true, description: "JSONL trace: Mooncake rows (timestamp, input_length, output_length, hash_ids; with session_id and delay, sessions), aiperf multi_turn or bailian (--trace-format), or a built-in one: builtin:mooncake-conversation, builtin:mooncake-synthetic, builtin:sample-sessions (a session trace); without it the synthetic shared-prefix workload runs" },
    traceFormat: { kind: "enum", choices: TRACE_FORMATS, default: "auto", description: "The trace's format: mooncake_trace (Dynamo's and aiperf's rows, with session_id and delay for sessions), multi_turn (aiperf's text sessions), bailian_trace (Alibaba's chat_id / parent_chat_id rows, 16-token hash ids); auto tells them from the first row" },
    traceBlockSize: { kind: "int", min: 1, default: 512, description: "Tokens each Mooncake trace hash id stands for (bailian ids are always 16)" },
    skipBadLines: { kind: "bool", default: false, description: "Replay the good lines of a trace with bad ones (otherwise stop before simulating); a session with a bad line is dropped whole" },
    requests: { kind: "int", min: 1, description: "Synthetic: number of requests (default 100). Trace: replay only its first N requests" },
    numPrefixes: { kind: "int", min: 1, default: 10, description: "Synthetic: distinct shared prefixes" },
    prefixTokens: { kind: "int", min: 0, default: 2048, description: "Synthetic: tokens per shared prefix" },
    suffixTokens: { kind: "int", min: 0, default: 256, description: "Synthetic: unique tokens after the prefix" },
    outputTokens: { kind: "int", min: 1, default: 128, description: "Synthetic: output tokens per request" },
    sessions: { kind: "int", min: 1, description: "The synthetic agentic workload: this many sessions (each turn's prompt = the previous prompt + the tokens it generated + a tool output)" },
    turns: { kind: "int", min: 1, default: 8, description: "Agentic: turns per session" },
    toolTokens: { kind: "int", min: 1, default: 256, description: "Agentic: new tool-output tokens each later turn appends" },
    thinkTimeMs: { kind: "number", min: 0, default: 1000, description: "Agentic: mean think time (ms, exponential) between a turn's end and the next turn" },
    seed: { kind: "int", min: 0, max: Number.MAX_SAFE_INTEGER, default: 0, description: "Seed of output tokens, synthetic prompts, random routing and Poisson arrivals" },
  }),
  ...group("Arrivals", {
    concurrency: { kind: "int", min: 1, description: "Closed loop: keep N requests in flight (ignores timestamps); on sessions, N sessions open at once" },
    requestRate: { kind: "number", min: 0.000001, description: "Poisson arrivals at R requests per second (ignores timestamps)" },
    arrivalSpeedupRatio: { kind: "number", min: 0.000001, default: 1, description: "Divides trace timestamps (2 = arrivals twice as dense)" },
    traceSpeedup: { kind: "number", min: 0.000001, description: "Same as --arrival-speedup-ratio; wins when both are given" },
    maxSessions: { kind: "int", min: 1, description: "Sessions: at most N open at once (a session's first turn waits for one to end)" },
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
  ...replayLayoutOptions,
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

/** The agentic workload's flags beside another workload would be silently unused. */
export function sessionWorkloadProblems(c: { sessions?: number; trace?: string }): string[] {
  return c.sessions !== undefined && c.trace !== undefined ? ["--sessions runs the synthetic agentic workload and --trace a trace: choose one"] : [];
}

export function replayProblems(c: ReplayConfig): string[] {
  const problems = [...engineProblems(c), ...replayLayoutProblems(c), ...sessionWorkloadProblems(c)];
  if (c.concurrency !== undefined && c.requestRate !== undefined) problems.push("--concurrency and --request-rate: choose one arrival mode");
  if (c.trace === undefined && c.prefixTokens + c.suffixTokens < 1) problems.push("--prefix-tokens + --suffix-tokens: a synthetic prompt needs at least 1 token");
  return problems;
}
