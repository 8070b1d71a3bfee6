// LoRA adapters through replay's simulation (the core simulator on a virtual clock, as `kvcr-mock
// replay` runs it), 8 workers, block size 64, 256 G1 blocks per worker:
//  1. Three adapters, each with four 4,096-token system prompts of its own (64 blocks each: a
//     worker holds four), a 128-token unique question and 32 output tokens per request, adapters
//     and prompts drawn at random. Each adapter is placed on 3 of the 8 workers (rendezvous, as
//     `replay --lora-replicas 3`) and the router only considers those (the LoRA filter). kv vs
//     round-robin: prefix reuse and TTFT per adapter and overall, then the verdict of round-robin
//     vs kv over `rounds` seeds (workload and tie breaks drawn with seed, seed + 1, …).
//  2. The batch's adapter budget: every worker holds every adapter, six adapters drawn at random
//     three 1,024-token prompts each, 64 output tokens, concurrency 48; --max-loras 1 vs 4: the
//     TTFT (which includes a request's wait for its adapter to enter the batch), with the verdict.
//  3. The router's prompt hashing under an adapter against the base model's: a 2,048-token prompt at
//     block size 64 (the WebAssembly chain with the adapter's 64-bit seed), µs per prompt.
// Replay is deterministic: one run per figure, machine load does not change them (section 3's
// timings do).
// Run: npx bun bench/lora.ts [rounds=3]
import type { EngineConfig } from "../src/core/engine/engine-config.ts";
import { createRng } from "../src/core/random/rng.ts";
import type { ReplayReport } from "../src/core/replay/report.ts";
import type { RoundSamples } from "../src/core/stats/run-samples.ts";
import { compareSides, type VerdictEntry } from "../src/core/stats/verdict.ts";
import type { WorkloadRequest } from "../src/core/workload/workload.ts";
import { createBlockHasher } from "../src/lib/xxh3.ts";
import { entryText } from "../src/roles/shared/measure/verdict-text.ts";
import { simulateStackWithSamples, type SimulatedStack } from "../src/roles/shared/measure/simulated-stack.ts";
import { machineLine } from "./lib/machine.ts";

const hasher = createBlockHasher();
const started = performance.now();
const roundsArg = process.argv[2] ?? "3";
const rounds = Number(roundsArg.replace(/^rounds=/, ""));
if (!Number.isInteger(rounds) || rounds < 1) throw new Error(`rounds: got ${JSON.stringify(roundsArg)}, expected a positive integer (e.g. 3 or rounds=3)`);

interface Mix {
  adapters: string[];
  promptsPerAdapter: number;
  systemTokens: number;
  questionTokens: number;
  outputTokens: number;
  requests: number;
}

/** Requests drawn with `seed`: an adapter, one of its system prompts, then a question of its own. */
function workloadOf(m: Mix, seed: number): WorkloadRequest[] {
  const rng = createRng(seed);
  return Array.from({ length: m.requests }, (_, i) => {
    const a = rng.int(m.adapters.length);
    const p = rng.int(m.promptsPerAdapter);
    const system = (a * m.promptsPerAdapter + p + 1) * 100_000;
    const question = 10_000_000 + (seed % 1000) * 100_000 + i * 1000;
    return {
      timestampMs: 0,
      inputLength: m.systemTokens + m.questionTokens,
      outputLength: m.outputTokens,
      loraName: m.adapters[a]!,
      writeTokens: (out: Uint32Array) => {
        for (let t = 0; t < m.systemTokens; t++) out[t] = system + t;
        for (let t = 0; t < m.questionTokens; t++) out[m.systemTokens + t] = question + t;
      },
    };
  });
}

const ENGINE: Partial<EngineConfig> = { blockSize: 64, numGpuBlocks: 256, maxNumBatchedTokens: 8192 };

function run(m: Mix, stack: SimulatedStack, concurrency: number, round: number): { report: ReplayReport; samples: RoundSamples } {
  const seed = 38 + round - 1;
  return simulateStackWithSamples(workloadOf(m, seed), stack, { arrival: { kind: "concurrency", concurrency }, seed, startedMs: performance.now() }, { hasher, now: () => performance.now() });
}

function verdict(m: Mix, stacks: [SimulatedStack, SimulatedStack], labels: [string, string], concurrency: number, show: (e: VerdictEntry) => boolean): string {
  const sides = stacks.map((s, k) => ({ label: labels[k]!, rounds: Array.from({ length: rounds }, (_, r) => run(m, s, concurrency, r + 1).samples) }));
  return compareSides(sides, { seed: 38, paired: true }).entries.filter(show).map(entryText).join("; ");
}

const f = (x: number, d = 1) => x.toFixed(d);
const out: string[] = [];

// 1. kv vs round-robin with the LoRA filter.
const placed: Mix = { adapters: ["sql-lora", "chat-lora", "code-lora"], promptsPerAdapter: 4, systemTokens: 4096, questionTokens: 128, outputTokens: 32, requests: 360 };
const stackOf = (mode: "kv" | "round-robin"): SimulatedStack => ({ numWorkers: 8, routerMode: mode, engine: ENGINE, loraReplicas: 3 });
out.push("### kv vs round-robin, 3 adapters on 3 of 8 workers each (the LoRA filter)", "");
out.push(`| concurrency | mode | mean TTFT (ms) | P99 TTFT (ms) | prefix reuse | reuse per adapter (${placed.adapters.join(", ")}) | mean TTFT per adapter (ms) |`, "|---|---|---|---|---|---|---|");
const verdicts: string[] = [];
for (const c of [8, 32]) {
  for (const mode of ["kv", "round-robin"] as const) {
    const r = run(placed, stackOf(mode), c, 1).report;
    const per = r.by_lora_adapter!.filter((a) => a.lora_name !== null);
    const byName = (n: string) => per.find((a) => a.lora_name === n)!;
    out.push(`| ${c} | ${mode} | ${f(r.mean_ttft_ms)} | ${f(r.p99_ttft_ms)} | ${f(r.prefix_cache_reuse_ratio, 3)} | ${placed.adapters.map((n) => f(byName(n).prefix_cache_reuse_ratio, 3)).join(" / ")} | ${placed.adapters.map((n) => f(byName(n).mean_ttft_ms)).join(" / ")} |`);
  }
  verdicts.push(`- concurrency ${c}, round-robin vs kv over ${rounds} seeds: ${verdict(placed, [stackOf("kv"), stackOf("round-robin")], ["kv", "round-robin"], c, (e) => e.metric === "mean_ttft_ms" || e.metric === "prefix_cache_reuse_ratio")}`);
}
out.push("", ...verdicts, "");

// 2. The adapter budget of a batch.
const budget: Mix = { adapters: ["a1", "a2", "a3", "a4", "a5", "a6"], promptsPerAdapter: 3, systemTokens: 1024, questionTokens: 128, outputTokens: 64, requests: 480 };
const budgetStack = (maxLoras: number): SimulatedStack => ({ numWorkers: 8, routerMode: "kv", engine: { ...ENGINE, numGpuBlocks: 4096, maxLoras } });
out.push("### --max-loras 1 vs 4, 6 adapters on every worker, kv routing, concurrency 48", "");
out.push("| --max-loras | mean TTFT (ms) | P99 TTFT (ms) | mean E2E (ms) | output tokens/s (simulated) |", "|---|---|---|---|---|");
for (const ml of [1, 4]) {
  const r = run(budget, budgetStack(ml), 48, 1).report;
  out.push(`| ${ml} | ${f(r.mean_ttft_ms)} | ${f(r.p99_ttft_ms)} | ${f(r.mean_e2el_ms)} | ${f(r.output_throughput)} |`);
}
out.push("", `- --max-loras 4 vs 1 over ${rounds} seeds: ${verdict(budget, [budgetStack(1), budgetStack(4)], ["max-loras 1", "max-loras 4"], 48, (e) => e.metric === "mean_ttft_ms" || e.metric === "p90_ttft_ms" || e.call === "higher" || e.call === "lower")}`);

// 3. Hash time per prompt, base vs adapter: both warmed up, then 5 alternating runs of 20,000
// prompts each (alternating spreads machine load over both), the median run of each.
const prompt = Uint32Array.from({ length: 2048 }, (_, i) => (i * 7919) % 100_000);
const adapterSeed = hasher.seedOf("sql-lora");
const timeRun = (seed: bigint | undefined) => {
  const t0 = performance.now();
  for (let i = 0; i < 20_000; i++) hasher.sequenceHashes(prompt, 64, undefined, seed);
  return ((performance.now() - t0) * 1000) / 20_000;
};
timeRun(undefined);
timeRun(adapterSeed);
const baseRuns: number[] = [];
const adapterRuns: number[] = [];
for (let r = 0; r < 5; r++) {
  baseRuns.push(timeRun(undefined));
  adapterRuns.push(timeRun(adapterSeed));
}
const median = (xs: number[]) => xs.sort((x, y) => x - y)[2]!;
const baseUs = median(baseRuns);
const adapterUs = median(adapterRuns);
out.push("", "### Router prompt hashing, 2,048 tokens at block size 64 (median of 5 alternating runs × 20,000)", "", `base model ${f(baseUs, 2)} µs, adapter (64-bit seed) ${f(adapterUs, 2)} µs per prompt`);

console.log(out.join("\n"));
console.log(machineLine(`wall time ${((performance.now() - started) / 1000).toFixed(1)} s`));
