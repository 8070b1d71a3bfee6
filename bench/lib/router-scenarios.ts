// The two workloads of the kv vs round-robin figures, shared by bench/router-modes.ts (live
// stacks) and bench/replay-router-sweep.ts (replay's simulation) so both run the same requests on
// the same stack settings: the stack file a fresh live stack starts from is also what the
// simulated stack is read from (up's defaults for every setting the file leaves out).
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { globalWorkers, upConfigFrom } from "../../src/config/up.ts";
import { simulatedStackFrom, type SimulatedStack } from "../../src/roles/shared/measure/simulated-stack.ts";
import type { WorkloadOptions } from "../../src/roles/shared/measure/workload.ts";

const ROOT = resolve(import.meta.dir, "../..");
export const TRACE = resolve(ROOT, "traces/mooncake_conversation_trace.jsonl");
export const MODES = ["kv", "round-robin"] as const;
export const WORKERS = 4;
export const SWEEP = [2, 8, 32];

export interface RouterScenario {
  name: string;
  describe: string;
  /** The `stack` and `mockers` sections of the stack file (snake_case keys). */
  stack: Record<string, unknown>;
  mockers: Record<string, unknown>;
  /** The workload; `requests` is set per concurrency by requestsAt. */
  workload: Omit<WorkloadOptions, "requests">;
  /** Requests run at one concurrency (the same for both modes, live and replay). */
  requestsAt(concurrency: number): number;
  /** The same workload and stack as `kvcr-mock replay` flags (for the printed method). */
  replayFlags: string;
}

const SHARED_PREFIX_REQUESTS = 160;
// Closed loop of ~14k-token prompts with 357 output tokens: ~1.4 s of wall time per request at
// concurrency 2 against ~0.3 s at 32, so the count follows the concurrency (each in-flight place turns over
// at least 4 times) instead of one count that would either dwarf the budget at 2 or leave 32 a
// single burst.
const traceRequests = (c: number) => Math.max(16, 4 * c);

export const SCENARIOS: RouterScenario[] = [
  {
    name: "shared-prefix",
    describe: `16 prefixes × 4,096 tokens + 128 unique, 32 output tokens, ${SHARED_PREFIX_REQUESTS} requests (seed 7); block size 64, G1 512 blocks (32,768 tokens) per worker so one worker holds half the prefixes, no G2 (direct mode: no state agent)`,
    stack: { kv_state_agent: false },
    mockers: { num_gpu_blocks_override: 512, num_host_blocks: 0 },
    workload: { traceBlockSize: 512, skipBadLines: false, synthetic: { numPrefixes: 16, prefixTokens: 4096, suffixTokens: 128, outputTokens: 32 }, seed: 7 },
    requestsAt: () => SHARED_PREFIX_REQUESTS,
    replayFlags: `--num-prefixes 16 --prefix-tokens 4096 --suffix-tokens 128 --output-tokens 32 --seed 7 --requests ${SHARED_PREFIX_REQUESTS} --num-workers ${WORKERS} --num-gpu-blocks-override 512 --num-host-blocks 0`,
  },
  {
    name: "mooncake-conversation",
    describe: "Mooncake conversation trace from its first line (~14-15k-token prompts and ~360-390 output tokens on average; trace block 512 tokens), closed loop (timestamps ignored), max(16, 4 × concurrency) requests; up's defaults (state agent, block size 64, G1 16,384 and G2 4,096 blocks per worker)",
    stack: {},
    mockers: {},
    workload: { trace: TRACE, traceBlockSize: 512, skipBadLines: false, synthetic: { numPrefixes: 1, prefixTokens: 1, suffixTokens: 1, outputTokens: 1 }, seed: 0 },
    requestsAt: traceRequests,
    replayFlags: `--trace traces/mooncake_conversation_trace.jsonl --requests <max(16, 4c)> --num-workers ${WORKERS} --num-host-blocks 4096`,
  },
];

/** Writes the scenario's `up` stack file into a new temporary directory; remove() deletes it. */
export function stackFileOf(sc: RouterScenario): { path: string; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), "kvcr-bench-router-"));
  const path = join(dir, "stack.json");
  writeFileSync(path, JSON.stringify({ stack: { workers_per_process: WORKERS, ...sc.stack }, mockers: sc.mockers }));
  return { path, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** The stack a live run of this scenario starts, as replay simulates it (workers × engine × router). */
export function simulatedStackOf(sc: RouterScenario, routerMode: (typeof MODES)[number]): SimulatedStack {
  const file = stackFileOf(sc);
  try {
    const c = upConfigFrom(["--config", file.path, "--router-mode", routerMode]);
    return simulatedStackFrom({ ...c, numWorkers: globalWorkers(c) });
  } finally {
    file.remove();
  }
}

export const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
