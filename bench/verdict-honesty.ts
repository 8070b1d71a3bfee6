// Are bench's verdicts honest? Checks on fresh stacks started by the launcher's code as
// `bench --compare-router-modes` starts them (4 workers in one mocker process at speedup 2, so a
// run takes seconds; direct mode; G1 512 blocks of 64 tokens per worker, so one worker holds 8 of
// the 16 shared prefixes, not all of them), and on the same stack in replay:
//   1. A/A live: `pairs` comparisons of kv against kv (the same mode twice, `rounds` rounds each,
//      fresh stacks every round): how many call any difference (the goal: at most 1 in 20).
//   2. A/A in replay: 200 such comparisons on the simulated stack, each side's rounds drawn with
//      seeds of its own (so the sides are independent samples of the same setup): the same count
//      over many more comparisons than live stacks allow in minutes.
//   3. kv vs round-robin live, 5 rounds: the verdict, which should call kv's mean TTFT lower with
//      an interval that excludes 1 (round-robin sends every prefix to every worker, which cannot
//      hold them all).
//   4. The same with 1 round of 12 requests: too small to tell, which the verdict should say.
// Each check prints the verdict as bench prints it; the A/A counts are what docs/PERFORMANCE.md
// quotes. About 6 minutes on a 2-core machine.
// Run: npx bun bench/verdict-honesty.ts [pairs=6] [rounds=3]
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { freshStackStarter } from "../src/cli/bench-stack.ts";
import { globalWorkers, upConfigFrom } from "../src/config/up.ts";
import { compareSides, type Verdict } from "../src/core/stats/verdict.ts";
import { createLogger } from "../src/lib/logger.ts";
import { createBlockHasher } from "../src/lib/xxh3.ts";
import { entryText, verdictNotes } from "../src/roles/shared/measure/verdict-text.ts";
import { runBench } from "../src/roles/bench/run-bench.ts";
import type { BenchOptions, BenchTarget } from "../src/roles/bench/bench-types.ts";
import { simulatedStackFrom, simulateStackWithSamples } from "../src/roles/shared/measure/simulated-stack.ts";
import { loadWorkload } from "../src/roles/shared/measure/workload.ts";
import { quietBenchDeps, scriptBenchOptions } from "./lib/quiet-bench.ts";
import { machineLine } from "./lib/machine.ts";

const arg = (i: number, name: string, fallback: number) => {
  const text = (process.argv[i] ?? String(fallback)).replace(new RegExp(`^${name}=`), "");
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1) throw new Error(`${name}: got ${JSON.stringify(process.argv[i])}, expected a positive integer (e.g. ${fallback} or ${name}=${fallback})`);
  return n;
};
const pairs = arg(2, "pairs", 6);
const rounds = arg(3, "rounds", 3);

const SPEEDUP = 2;
const STACK = { stack: { workers_per_process: 4, kv_state_agent: false }, mockers: { num_gpu_blocks_override: 512, num_host_blocks: 0, speedup_ratio: SPEEDUP } };
const WORKLOAD = { numPrefixes: 16, prefixTokens: 4096, suffixTokens: 128, outputTokens: 32 };
/** A/A runs: 4 requests per prefix, enough to exercise hits and misses, quick. */
const AA_REQUESTS = 64;
const AA_CONCURRENCY = 8;
/**
 * kv vs round-robin: 6 per prefix at concurrency 2, where little queueing stands between a
 * prefix hit and its TTFT (at 32 in flight, queueing on a loaded machine swamped it).
 */
const MODES_REQUESTS = 96;
const MODES_CONCURRENCY = 2;
const REPLAY_PAIRS = 200;

const dir = mkdtempSync(join(tmpdir(), "kvcr-verdict-honesty-"));
const stackFile = join(dir, "stack.json");
writeFileSync(stackFile, JSON.stringify(STACK));
const logger = createLogger({ level: "error" });
const startStack = freshStackStarter(stackFile, logger, process.env);
const started = performance.now();
let highestLoad = loadavg()[0]!;
const elapsed = () => `${((performance.now() - started) / 1000).toFixed(0)} s`;

async function compare(targets: BenchTarget[], r: number, requests: number, concurrency: number, seed: number): Promise<Verdict> {
  const opts = scriptBenchOptions({ targets, rounds: r, workload: { traceBlockSize: 512, skipBadLines: false, synthetic: WORKLOAD, requests, seed }, concurrency });
  const { verdict, results } = await runBench(opts, quietBenchDeps(logger, { startStack }));
  const failed = results.reduce((n, x) => n + x.failed, 0);
  if (failed > 0) throw new Error(`${failed} request(s) failed: the figures would not be comparable`);
  highestLoad = Math.max(highestLoad, loadavg()[0]!);
  return verdict!;
}

const called = (v: Verdict) => v.entries.filter((e) => e.call === "higher" || e.call === "lower");

/** A/A tally: comparisons with any call, calls per figure, figures left unresolved. */
function tally() {
  const t = { comparisons: 0, withCall: 0, byMetric: new Map<string, number>(), unresolved: new Map<string, number>(), family: 0 };
  return {
    t,
    add(v: Verdict) {
      t.comparisons++;
      const calls = called(v);
      if (calls.length > 0) t.withCall++;
      for (const e of calls) t.byMetric.set(e.metric, (t.byMetric.get(e.metric) ?? 0) + 1);
      for (const e of v.entries.filter((x) => x.call === "unresolved")) t.unresolved.set(e.metric, (t.unresolved.get(e.metric) ?? 0) + 1);
      t.family = Math.max(t.family, v.family);
      return calls;
    },
    line(what: string) {
      return `${what}: ${t.withCall} of ${t.comparisons} comparisons called any difference (family of up to ${t.family} figures, Holm at 5 %)${t.byMetric.size > 0 ? `; figures called: ${[...t.byMetric].map(([m, n]) => `${m} ${n}×`).join(", ")}` : ""}${t.unresolved.size > 0 ? `; left unresolved (client lag): ${[...t.unresolved].map(([m, n]) => `${m} in ${n}`).join(", ")}` : ""}`;
    },
  };
}

function verdictLines(title: string, v: Verdict): string[] {
  return [`\n${title}:`, ...v.entries.map((e) => `  ${e.side} vs ${e.baseline}: ${entryText(e)}`), ...verdictNotes(v).map((n) => `  ${n}`)];
}

const lines: string[] = [];
try {
  // 1. A/A live: the same mode twice, a new seed per pair.
  const live = tally();
  for (let p = 0; p < pairs; p++) {
    const v = await compare([{ label: "kv (A)", fresh: { routerMode: "kv" } }, { label: "kv (B)", fresh: { routerMode: "kv" } }], rounds, AA_REQUESTS, AA_CONCURRENCY, 100 + p * rounds);
    const calls = live.add(v);
    console.error(`[${elapsed()}] A/A pair ${p + 1}/${pairs}: ${calls.length === 0 ? "no call" : calls.map((e) => `${e.metric} ${e.call} (${e.ci_low?.toFixed(3)}–${e.ci_high?.toFixed(3)})`).join(", ")}; load ${loadavg()[0]!.toFixed(2)}`);
  }
  lines.push(live.line(`A/A live (kv vs kv, ${rounds} rounds per side, fresh stacks, ${AA_REQUESTS} requests per round at concurrency ${AA_CONCURRENCY})`));

  // 2. A/A in replay: independent seeds per side.
  const simulated = tally();
  const config = upConfigFrom(["--config", stackFile, "--router-mode", "kv"]);
  const stack = simulatedStackFrom({ ...config, numWorkers: globalWorkers(config) });
  const hasher = createBlockHasher();
  const roundOf = (seed: number) => {
    const workload = loadWorkload({ traceBlockSize: 512, skipBadLines: false, synthetic: WORKLOAD, requests: AA_REQUESTS, seed }, { readFile: (p) => readFileSync(p, "utf8"), logger });
    return simulateStackWithSamples(workload, stack, { arrival: { kind: "concurrency", concurrency: AA_CONCURRENCY }, seed, startedMs: 0 }, { hasher, now: () => 0 }).samples;
  };
  for (let p = 0; p < REPLAY_PAIRS; p++) {
    const side = (label: string, first: number) => ({ label, rounds: Array.from({ length: rounds }, (_, k) => roundOf(first + k)) });
    simulated.add(compareSides([side("kv (A)", 10_000 + 2 * p * rounds), side("kv (B)", 10_000 + (2 * p + 1) * rounds)], { seed: p }));
  }
  console.error(`[${elapsed()}] A/A in replay done`);
  lines.push(simulated.line(`A/A in replay (the same stack simulated, ${rounds} rounds per side, every round its own seed)`));

  // 3. kv vs round-robin, 5 rounds.
  const modes: BenchTarget[] = [{ label: "kv", fresh: { routerMode: "kv" } }, { label: "round-robin", fresh: { routerMode: "round-robin" } }];
  const v = await compare(modes, 5, MODES_REQUESTS, MODES_CONCURRENCY, 7);
  console.error(`[${elapsed()}] kv vs round-robin done`);
  lines.push(...verdictLines(`kv vs round-robin live (5 rounds per side, ${MODES_REQUESTS} requests per round at concurrency ${MODES_CONCURRENCY})`, v));

  // 4. Too small to tell.
  const small = await compare(modes, 1, 12, MODES_CONCURRENCY, 7);
  console.error(`[${elapsed()}] small run done`);
  lines.push(...verdictLines("kv vs round-robin live, 1 round of 12 requests", small));
} finally {
  rmSync(dir, { recursive: true, force: true });
}
lines.push(`\nstack: 1 mocker process × 4 workers at speedup ${SPEEDUP}, direct mode, G1 512 × 64-token blocks per worker, no G2; workload ${WORKLOAD.numPrefixes} prefixes × ${WORKLOAD.prefixTokens} + ${WORKLOAD.suffixTokens} tokens, ${WORKLOAD.outputTokens} output tokens, closed loop`);
lines.push(machineLine(`1-minute load average at most ${highestLoad.toFixed(2)} after any comparison; wall time ${((performance.now() - started) / 60_000).toFixed(1)} min`));
console.log(lines.join("\n"));
