// kv vs round-robin routing on the same stack configuration (issue 13 figure): for a shared-prefix
// workload and for the Mooncake conversation trace (time-compressed), each mode gets a fresh stack
// started by the launcher's code as `bench --compare-router-modes` starts it (1 mocker process ×
// 4 workers at speedup 1, one frontend) and the same seeded workload. Prints the median
// of `runs` rounds per figure and writes the HTML report of the last round to
// dist/bench-router-modes-<workload>.html.
// Run: npm run bench:router-modes [-- runs=3 [scenario]]
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { resolve } from "node:path";
import { createLogger } from "../src/lib/logger.ts";
import { createBlockHasher } from "../src/lib/xxh3.ts";
import { runBench, type BenchOptions } from "../src/roles/bench/run-bench.ts";
import type { BenchResult } from "../src/roles/bench/metrics.ts";
import { freshStackStarter } from "../src/cli/bench-stack.ts";

const ROOT = resolve(import.meta.dir, "..");
const TRACE = resolve(ROOT, "test/fixtures/traces/mooncake_conversation_trace.jsonl");
const runs = Number(process.argv[2] ?? 3);
const only = process.argv[3];
const MODES = ["kv", "round-robin"] as const;
const WORKERS = 4;

interface Scenario {
  name: string;
  describe: string;
  /** The `stack` and `mockers` sections of the stack file (snake_case keys). */
  stack: Record<string, unknown>;
  mockers: Record<string, unknown>;
  bench: Partial<BenchOptions>;
}

const SCENARIOS: Scenario[] = [
  {
    name: "shared-prefix",
    describe: "16 prefixes × 4,096 tokens + 128 unique, 32 output tokens, 200 requests at concurrency 2 and 8; G1 512 blocks (32,768 tokens) per worker and no G2 (so direct mode: no state agent), so one worker holds half the prefixes",
    stack: { kv_state_agent: false },
    mockers: { num_gpu_blocks_override: 512, num_host_blocks: 0 },
    bench: { workload: { traceBlockSize: 512, skipBadLines: false, synthetic: { numPrefixes: 16, prefixTokens: 4096, suffixTokens: 128, outputTokens: 32 }, requests: 200, seed: 7 }, sweepConcurrency: [2, 8] },
  },
  {
    name: "mooncake-conversation",
    describe: "Mooncake conversation trace, first 400 requests (~13.8k-token prompts, 357 output tokens), timestamps ÷ 4; up's defaults (state agent, G1 16,384 and G2 4,096 blocks per worker)",
    stack: {},
    mockers: {},
    bench: { workload: { trace: TRACE, traceBlockSize: 512, skipBadLines: false, synthetic: { numPrefixes: 1, prefixTokens: 1, suffixTokens: 1, outputTokens: 1 }, requests: 400, seed: 0 }, arrivalSpeedupRatio: 4 },
  },
];

const logger = createLogger({ level: "warn" });
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
mkdirSync(resolve(ROOT, "dist"), { recursive: true });

const lines: string[] = [];
for (const sc of SCENARIOS.filter((x) => only === undefined || x.name === only)) {
  const byLabel = new Map<string, BenchResult[]>();
  for (let round = 0; round < runs; round++) {
    const report = resolve(ROOT, `dist/bench-router-modes-${sc.name}.html`);
    // A fresh stack per mode and point (cold caches, same configuration), as bench starts them.
    const stackDir = mkdtempSync(join(tmpdir(), "kvcr-bench-modes-"));
    const stackFile = join(stackDir, "stack.json");
    writeFileSync(stackFile, JSON.stringify({ stack: { workers_per_process: WORKERS, ...sc.stack }, mockers: sc.mockers }));
    try {
      const opts: BenchOptions = {
        targets: MODES.map((m) => ({ label: m, fresh: { routerMode: m } })),
        endpoint: "/v1/completions",
        promptFormat: "tokens",
        stream: true,
        ignoreEos: true,
        workload: sc.bench.workload!,
        concurrency: sc.bench.concurrency,
        sweepConcurrency: sc.bench.sweepConcurrency,
        arrivalSpeedupRatio: sc.bench.arrivalSpeedupRatio ?? 1,
        warmupRequests: 0,
        percentiles: [50, 90, 99],
        requestTimeoutS: 120,
        workerHeader: "x-kvcr-worker",
        report: round === runs - 1 ? report : undefined,
      };
      const { results } = await runBench(opts, {
        hasher: createBlockHasher(),
        readFile: (p) => readFileSync(p, "utf8"),
        writeFile: (p, t) => writeFileSync(p, t),
        checkWritable: () => {},
        stdout: { write: () => {} },
        logger,
        now: () => performance.now(),
        sleep: (ms) => Bun.sleep(ms),
        startStack: freshStackStarter(stackFile, logger, process.env),
      });
      for (const r of results) byLabel.set(r.label!, [...(byLabel.get(r.label!) ?? []), r]);
      console.error(`${sc.name} round ${round + 1}/${runs}: ${results.map((r) => `${r.label} mean TTFT ${r.mean_ttft_ms.toFixed(1)} ms, reuse ${r.prefix_cache_reuse_ratio?.toFixed(3)}`).join("; ")}`);
    } finally {
      rmSync(stackDir, { recursive: true, force: true });
    }
  }
  const m = (label: string, f: (r: BenchResult) => number) => median(byLabel.get(label)!.map(f));
  const labels = [...byLabel.keys()];
  lines.push(`\n${sc.name}: ${sc.describe}; ${WORKERS} workers, speedup 1, median of ${runs} rounds`);
  lines.push(`| router | mean TTFT (ms) | p99 TTFT (ms) | mean ITL (ms) | output tok/s | prefix reuse | failed |`);
  lines.push(`|---|---|---|---|---|---|---|`);
  for (const label of labels) {
    lines.push(`| ${label} | ${m(label, (r) => r.mean_ttft_ms).toFixed(1)} | ${m(label, (r) => r.p99_ttft_ms!).toFixed(1)} | ${m(label, (r) => r.mean_itl_ms).toFixed(2)} | ${m(label, (r) => r.output_throughput).toFixed(0)} | ${m(label, (r) => r.prefix_cache_reuse_ratio ?? NaN).toFixed(3)} | ${m(label, (r) => r.failed)} |`);
  }
  for (const kvLabel of labels.filter((l) => l.startsWith("kv"))) {
    const rrLabel = kvLabel.replace(/^kv/, "round-robin");
    const ratio = m(rrLabel, (r) => r.mean_ttft_ms) / m(kvLabel, (r) => r.mean_ttft_ms);
    const points = (m(kvLabel, (r) => r.prefix_cache_reuse_ratio ?? NaN) - m(rrLabel, (r) => r.prefix_cache_reuse_ratio ?? NaN)) * 100;
    lines.push(`${kvLabel} vs ${rrLabel}: round-robin's mean TTFT is ${ratio.toFixed(2)}× kv's; prefix reuse ${points >= 0 ? "+" : ""}${points.toFixed(1)} points for kv`);
  }
  lines.push(`report: dist/bench-router-modes-${sc.name}.html`);
}
console.log(lines.join("\n"));
