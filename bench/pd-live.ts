// Disaggregated serving on live stacks (docs/PERFORMANCE.md, "Disaggregated prefill and decode"):
//  1. Live against replay on the P/D layout: `bench --compare-layouts agg,disagg` on fresh stacks
//     from the launcher's code (4 aggregated workers against 2 prefill + 2 decode, direct mode, no
//     G2, speedup 1) and `replay --compare-layouts agg,disagg` on the same stack settings and the
//     same requests; each disagg/agg ratio live against replay's (target: within 10 %).
//  2. Conditional disaggregation on short prompts: the same P/D stack with and without
//     --router-conditional-disagg on prompts that are short once their shared prefix is cached,
//     with bench's verdict (the plain P/D stack is the baseline).
// Each side runs `runs` rounds (fresh stacks, seed + round − 1); figures are medians over rounds.
// Run: npx bun bench/pd-live.ts [runs=3]
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freshStackStarter } from "../src/cli/bench-stack.ts";
import { layoutUpArgs } from "../src/config/bench-layouts.ts";
import { globalWorkers, upConfigFrom } from "../src/config/up.ts";
import { createLogger } from "../src/lib/logger.ts";
import { createBlockHasher } from "../src/lib/xxh3.ts";
import type { BenchOptions, BenchTarget } from "../src/roles/bench/bench-types.ts";
import { formatVerdict } from "../src/roles/shared/measure/verdict-text.ts";
import type { BenchResult } from "../src/roles/bench/metrics.ts";
import { runBench } from "../src/roles/bench/run-bench.ts";
import { runLayouts } from "../src/roles/replay/layouts.ts";
import { simulatedStackFrom } from "../src/roles/shared/measure/simulated-stack.ts";
import { loadWorkload, type WorkloadOptions } from "../src/roles/shared/measure/workload.ts";
import { quietBenchDeps, scriptBenchOptions } from "./lib/quiet-bench.ts";
import { machineLine } from "./lib/machine.ts";

const runs = Number((process.argv[2] ?? "3").replace(/^runs=/, ""));
if (!Number.isInteger(runs) || runs < 1) throw new Error(`runs: got ${JSON.stringify(process.argv[2])}, expected a positive integer`);
const logger = createLogger({ level: "warn" });
const hasher = createBlockHasher();
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
const POOLS = { prefillWorkers: 2, decodeWorkers: 2 };
const CONCURRENCY = 8;

const dir = mkdtempSync(join(tmpdir(), "kvcr-bench-pd-"));
const stackFile = join(dir, "stack.json");
// Direct mode without G2 (replay simulates G1 alone the same way); block size 16 so short suffixes still fill blocks.
writeFileSync(stackFile, JSON.stringify({ stack: { kv_state_agent: false }, mockers: { block_size: 16, num_gpu_blocks_override: 1024, num_host_blocks: 0 } }));
const startStack = freshStackStarter(stackFile, logger, process.env);
const deps = quietBenchDeps(logger, { hasher, startStack });

function options(targets: BenchTarget[], workload: WorkloadOptions): BenchOptions {
  return scriptBenchOptions({ targets, workload, concurrency: CONCURRENCY, rounds: runs });
}

type Figure = { label: string; live: (r: BenchResult) => number; replay: (r: { mean_ttft_ms: number; p90_ttft_ms: number; mean_itl_ms: number; mean_e2el_ms: number; output_throughput: number }) => number };
const FIGURES: Figure[] = [
  { label: "mean TTFT", live: (r) => r.mean_ttft_ms, replay: (r) => r.mean_ttft_ms },
  { label: "p90 TTFT", live: (r) => r.p90_ttft_ms ?? NaN, replay: (r) => r.p90_ttft_ms },
  { label: "mean ITL", live: (r) => r.mean_itl_ms, replay: (r) => r.mean_itl_ms },
  { label: "mean E2E latency", live: (r) => r.mean_e2el_ms, replay: (r) => r.mean_e2el_ms },
  { label: "output throughput", live: (r) => r.output_throughput, replay: (r) => r.output_throughput },
];

try {
  // 1. Live against replay, per layout ratio.
  const layoutWorkload: WorkloadOptions = { traceBlockSize: 512, skipBadLines: false, synthetic: { numPrefixes: 8, prefixTokens: 2048, suffixTokens: 256, outputTokens: 32 }, requests: 120, seed: 11 };
  const live = await runBench(options((["agg", "disagg"] as const).map((l) => ({ label: l, fresh: { routerMode: "kv", upArgs: layoutUpArgs(l, POOLS) } })), layoutWorkload), deps);
  const byLayout = (l: string) => live.results.filter((r) => r.label === l);
  const upConfig = upConfigFrom(["--config", stackFile, "--router-mode", "kv"]);
  const simulated = simulatedStackFrom({ ...upConfig, numWorkers: globalWorkers(upConfig) });
  const replayRounds = Array.from({ length: runs }, (_, k) => {
    const workload = loadWorkload({ ...layoutWorkload, seed: layoutWorkload.seed + k }, { readFile: deps.readFile, logger });
    return runLayouts(workload, simulated, { ...POOLS, kvTransferBandwidthGbps: 64, kvTransferTimingMode: "full_prompt", compare: ["agg", "disagg"] }, { arrival: { kind: "concurrency", concurrency: CONCURRENCY }, seed: 0 }, { hasher, now: deps.now }).reports;
  });
  console.log(`1. ${POOLS.prefillWorkers} prefill + ${POOLS.decodeWorkers} decode against 4 aggregated workers: 8 prefixes × 2,048 tokens + 256 unique, 32 output tokens, 120 requests, concurrency ${CONCURRENCY}; block 16, G1 1,024 blocks, no G2, direct mode, speedup 1; KV transfer 64 GB/s, full_prompt; median of ${runs} round(s) (fresh stacks, seed 11 + round − 1)\n`);
  console.log("| figure | live agg | live disagg | live disagg/agg | replay agg | replay disagg | replay disagg/agg | live ratio / replay ratio |");
  console.log("|---|---|---|---|---|---|---|---|");
  let worst = 0;
  for (const f of FIGURES) {
    const la = byLayout("agg").map(f.live);
    const ld = byLayout("disagg").map(f.live);
    const ra = replayRounds.map((r) => f.replay(r.agg!));
    const rd = replayRounds.map((r) => f.replay(r.disagg!));
    const liveRatio = median(ld.map((d, i) => d / la[i]!));
    const replayRatio = median(rd.map((d, i) => d / ra[i]!));
    const off = liveRatio / replayRatio;
    worst = Math.max(worst, Math.abs(off - 1));
    console.log(`| ${f.label} | ${median(la).toFixed(1)} | ${median(ld).toFixed(1)} | ${liveRatio.toFixed(3)} | ${median(ra).toFixed(1)} | ${median(rd).toFixed(1)} | ${replayRatio.toFixed(3)} | ${off.toFixed(3)} |`);
  }
  console.log(`\nworst live/replay ratio gap: ${(worst * 100).toFixed(1)} % (target ≤ 10 %); failed requests live: ${live.results.reduce((n, r) => n + r.failed, 0)}`);
  console.log(`\nLive, disagg vs agg:\n${formatVerdict(live.verdict!)}`);

  // 2. Conditional disaggregation on short prompts.
  const shortWorkload: WorkloadOptions = { traceBlockSize: 512, skipBadLines: false, synthetic: { numPrefixes: 4, prefixTokens: 1024, suffixTokens: 64, outputTokens: 16 }, requests: 120, seed: 21 };
  const pd = layoutUpArgs("disagg", POOLS);
  const cond = await runBench(
    options(
      [
        { label: "disagg", fresh: { routerMode: "kv", upArgs: pd } },
        { label: "disagg+conditional", fresh: { routerMode: "kv", upArgs: [...pd, "--router-conditional-disagg"] } },
      ],
      shortWorkload,
    ),
    deps,
  );
  console.log(`\n2. Conditional disaggregation (isl_bounding, 2,048 tokens / 0.7) on ${POOLS.prefillWorkers} + ${POOLS.decodeWorkers}: 4 prefixes × 1,024 tokens + 64 unique (effective prompt ~64–80 tokens once cached), 16 output tokens, 120 requests, concurrency ${CONCURRENCY}; median of ${runs} round(s)\n`);
  console.log("| stack | mean TTFT (ms) | p90 TTFT (ms) | mean ITL (ms) | mean E2E (ms) | failed |");
  console.log("|---|---|---|---|---|---|");
  for (const label of ["disagg", "disagg+conditional"]) {
    const rs = cond.results.filter((r) => r.label === label);
    const m = (f: (r: BenchResult) => number) => median(rs.map(f)).toFixed(1);
    console.log(`| ${label} | ${m((r) => r.mean_ttft_ms)} | ${m((r) => r.p90_ttft_ms ?? NaN)} | ${m((r) => r.mean_itl_ms)} | ${m((r) => r.mean_e2el_ms)} | ${rs.reduce((n, r) => n + r.failed, 0)} |`);
  }
  console.log(`\n${formatVerdict(cond.verdict!)}`);
  console.log(machineLine());
} finally {
  rmSync(dir, { recursive: true, force: true });
}
