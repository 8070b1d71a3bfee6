// Replay vs live agreement (the table of docs/PERFORMANCE.md, Replay vs live): one shared-prefix
// workload through a live stack started by the launcher's code (direct mode, 1 mocker process × 2
// workers at speedup 1, no G2, kv frontend) and through `replay`'s simulation of the same engines
// and router (`bench --with-replay`), median of `runs` fresh stacks. Prints the
// predicted-vs-measured table last. The bench flags are parsed exactly as the CLI parses them.
// Run: npm run bench:replay-vs-live [-- runs=3]
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freshStackStarter } from "../src/cli/bench-stack.ts";
import { benchOptions, benchProblems, type BenchConfig } from "../src/config/bench.ts";
import { commonOptions } from "../src/config/common.ts";
import { loadConfig } from "../src/config/load.ts";
import { createLogger } from "../src/lib/logger.ts";
import { formatPrediction, type ComparedFigure } from "../src/roles/bench/format-result.ts";
import { benchOptionsFrom } from "../src/roles/bench/options-from-config.ts";
import { runBench } from "../src/roles/bench/run-bench.ts";
import { predictionFigures } from "../src/roles/bench/with-replay.ts";
import { quietBenchDeps } from "./lib/quiet-bench.ts";

const runs = Number(process.argv[2] ?? 3);
const WORKERS = 2;
const FLAGS = ["--requests", "200", "--concurrency", "8", "--num-prefixes", "8", "--prefix-tokens", "1024", "--suffix-tokens", "128", "--output-tokens", "64", "--seed", "3", "--with-replay", "--num-workers", String(WORKERS), "--router-mode", "kv"];
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;

const logger = createLogger({ level: "warn" });
const stackDir = mkdtempSync(join(tmpdir(), "kvcr-bench-rvl-"));
const stackFile = join(stackDir, "stack.json");
writeFileSync(stackFile, JSON.stringify({ stack: { workers_per_process: WORKERS, kv_state_agent: false }, mockers: { num_host_blocks: 0 } }));
const startStack = freshStackStarter(stackFile, logger, process.env);
const rounds: ComparedFigure[][] = [];
for (let round = 0; round < runs; round++) {
  const stack = await startStack({ routerMode: "kv" });
  const argv = ["--url", stack.url, ...FLAGS];
  const config = loadConfig({ ...benchOptions, ...commonOptions }, { argv, env: {} }, (c) => benchProblems(c as BenchConfig)).config as BenchConfig;
  const outcome = await runBench(benchOptionsFrom(config), quietBenchDeps(logger));
  await stack.close();
  const figures = predictionFigures(outcome.replay!, outcome.results[0]!);
  rounds.push(figures);
  console.error(`round ${round + 1}/${runs}: ${figures.slice(0, 2).map((f) => `${f.label} predicted ${f.predicted.toFixed(2)} measured ${f.measured.toFixed(2)}`).join("; ")}`);
}
rmSync(stackDir, { recursive: true, force: true });
const merged = rounds[0]!.map((f, i) => ({ ...f, predicted: median(rounds.map((r) => r[i]!.predicted)), measured: median(rounds.map((r) => r[i]!.measured)) }));
console.log(`kvcr-mock bench ${FLAGS.join(" ")} against 1 mocker × ${WORKERS} workers (direct mode, no G2) + kv frontend, speedup 1; median of ${runs} fresh stacks`);
console.log(formatPrediction(merged));
