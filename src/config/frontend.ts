// `kvcr-mock frontend` options (Dynamo frontend spellings), by --help topic: HTTP, the router
// (mode, the shared router tuning options, block size, seed), limits, failures (retries, ejection,
// migration), and discovery.
import { discoveryOptions, discoveryProblems } from "./discovery.ts";
import { defineOptions, group, type ConfigOf } from "./options.ts";
import { LIVE_ROUTER_MODES, REPLAY_ONLY_ROUTER_MODES, routerModesHelp } from "../protocol/router-modes.ts";
import { routerTuningOptions } from "./router.ts";
import { replicaSyncOptions, replicaSyncProblems } from "./replica-sync.ts";
import { conditionalDisaggOptions, conditionalDisaggProblems } from "./conditional-disagg.ts";

/** What the frontend does when a worker fails (docs/DECISIONS.md, "Frontend"); `up` hands these on to its frontend. */
export const frontendFailureOptions = group("Failures", {
  routerRetries: {
    kind: "int",
    min: 0,
    max: 100,
    default: 2,
    description: "Times a request that never reached a worker (connection refused, or the worker answered 503) goes to the next-best worker",
  },
  workerEjectAfter: {
    kind: "int",
    min: 1,
    max: 1_000_000,
    default: 3,
    description: "Failed requests in a row that take a worker out of routing (back after 1 s doubling to 30 s, once its /health answers 200)",
  },
  workerStallTimeout: {
    kind: "number",
    min: 0.001,
    default: 5,
    description:
      "Seconds a worker may send nothing before its request fails with 504 (or migrates); its /health is then asked (1 s deadline) and a worker that does not answer leaves routing at once. Default below the 10 s --discovery-lease-ttl: a stalled worker is caught before its record lapses",
  },
  migrationLimit: {
    kind: "int",
    min: 0,
    max: 100,
    default: 0,
    env: "DYN_MIGRATION_LIMIT",
    description: "Times a request whose worker failed before or during its stream is resumed on another worker (prompt + tokens sent so far); 0 = never",
  },
  migrationMaxSeqLen: {
    kind: "int",
    min: 1,
    env: "DYN_MIGRATION_MAX_SEQ_LEN",
    description: "A request whose prompt + generated tokens exceed this stops being tracked and can no longer migrate (unset: no limit)",
  },
});

/** What every OpenAI route refuses: the frontend's, and each mock worker's own API (mocker --openai-port-base). */
export const requestLimitOptions = group("Limits", {
  maxRequestBytes: { kind: "int", min: 1024, default: 10 * 1024 * 1024, description: "Largest request body accepted (413 above)" },
  maxPromptBytes: {
    kind: "int",
    min: 1,
    default: 1 << 20,
    description: "Largest prompt text in UTF-8 bytes (completions prompt, or all chat messages' content); 400 above, before tokenizing",
  },
  bodyTimeoutMs: { kind: "int", min: 1, default: 30_000, description: "Milliseconds a request body may take to arrive in full (408 after, and the connection is closed)" },
  maxTokensLimit: { kind: "int", min: 1, default: 1 << 20, description: "Largest max_tokens / max_completion_tokens accepted (400 above)" },
});

export const frontendOptions = defineOptions({
  ...group("HTTP", {
    httpPort: { kind: "int", min: 0, max: 65535, default: 8000, env: "DYN_HTTP_PORT", description: "HTTP port of the OpenAI-compatible API; 0 = pick" },
    httpOverloadStatusCode: {
      kind: "int",
      min: 400,
      max: 599,
      default: 529,
      env: "DYN_HTTP_OVERLOAD_STATUS_CODE",
      description: "Status of a request shed because every worker is busy (529 as Dynamo; 503 for clients that only retry that)",
    },
    strictHealth: {
      kind: "bool",
      default: false,
      description: "/health answers 503 (not 200) while degraded: an agent's state is being re-synced or one of its slots is degraded",
    },
    tokenizer: {
      kind: "string",
      nonEmpty: true,
      description: "Tokenize text prompts as this Hugging Face tokenizer (a directory with tokenizer.json, or the file) does, so prompt counts and cache keys agree with a client counting with it (aiperf, Dynamo): a byte-level BPE without merges, as model-files writes; default: kvcr-mock's word tokenizer",
    },
  }),
  ...group("Router", {
    routerMode: {
      kind: "enum",
      choices: LIVE_ROUTER_MODES,
      refused: REPLAY_ONLY_ROUTER_MODES,
      default: "round-robin",
      env: "DYN_ROUTER_MODE",
      description: `How each request picks its (worker, rank): ${routerModesHelp(LIVE_ROUTER_MODES)} (as Dynamo's frontend, the default is round-robin)`,
    },
    ...routerTuningOptions,
    kvCacheBlockSize: { kind: "int", min: 1, description: "Block size the router hashes prompts with; workers with another are refused (default: the first worker's)" },
    seed: { kind: "int", min: 0, max: 0xffff_ffff, description: "Seed of random routing and tie-breaking (default: random per process)" },
  }),
  ...conditionalDisaggOptions,
  ...requestLimitOptions,
  ...frontendFailureOptions,
  ...replicaSyncOptions,
  ...discoveryOptions,
});

export type FrontendConfig = ConfigOf<typeof frontendOptions>;

export function frontendProblems(c: FrontendConfig): string[] {
  return [...conditionalDisaggProblems(c), ...discoveryProblems(c), ...replicaSyncProblems(c)];
}
