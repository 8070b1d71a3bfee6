// Replay vs live agreement (issue 13 figure): one shared-prefix workload through a live stack
// (1 mocker process × 2 workers at speedup 1, kv frontend) and through `replay`'s simulation of
// the same engines and router (`bench --with-replay`), median of `runs` fresh stacks. Prints the
// predicted-vs-measured table last. The bench flags are parsed exactly as the CLI parses them.
// Run: npm run bench:replay-vs-live [-- runs=3]
import { readFileSync } from "node:fs";
import { benchOptions, benchProblems, type BenchConfig } from "../src/config/bench.ts";
import { commonOptions } from "../src/config/common.ts";
import { loadConfig } from "../src/config/load.ts";
import { createLogger } from "../src/lib/logger.ts";
import { createBlockHasher } from "../src/lib/xxh3.ts";
import { formatPrediction, type ComparedFigure } from "../src/roles/bench/format-result.ts";
import { benchOptionsFrom } from "../src/roles/bench/options-from-config.ts";
import { runBench } from "../src/roles/bench/run-bench.ts";
import { predictionFigures } from "../src/roles/bench/with-replay.ts";
import { startLiveStack } from "./lib/live-stack.ts";

const runs = Number(process.argv[2] ?? 3);
const WORKERS = 2;
const FLAGS = ["--requests", "200", "--concurrency", "8", "--num-prefixes", "8", "--prefix-tokens", "1024", "--suffix-tokens", "128", "--output-tokens", "64", "--seed", "3", "--with-replay", "--num-workers", String(WORKERS), "--router-mode", "kv"];
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;

const rounds: ComparedFigure[][] = [];
for (let round = 0; round < runs; round++) {
  await using stack = await startLiveStack({ routerMode: "kv", workers: WORKERS });
  const argv = ["--url", stack.url, ...FLAGS];
  const config = loadConfig({ ...benchOptions, ...commonOptions }, { argv, env: {} }, (c) => benchProblems(c as BenchConfig)).config as BenchConfig;
  const outcome = await runBench(benchOptionsFrom(config), {
    hasher: createBlockHasher(),
    readFile: (p) => readFileSync(p, "utf8"),
    writeFile: () => {},
    checkWritable: () => {},
    stdout: { write: () => {} },
    logger: createLogger({ level: "warn" }),
    now: () => performance.now(),
    sleep: (ms) => Bun.sleep(ms),
  });
  const figures = predictionFigures(outcome.replay!, outcome.results[0]!);
  rounds.push(figures);
  console.error(`round ${round + 1}/${runs}: ${figures.slice(0, 2).map((f) => `${f.label} predicted ${f.predicted.toFixed(2)} measured ${f.measured.toFixed(2)}`).join("; ")}`);
}
const merged = rounds[0]!.map((f, i) => ({ ...f, predicted: median(rounds.map((r) => r[i]!.predicted)), measured: median(rounds.map((r) => r[i]!.measured)) }));
console.log(`kvcr-mock bench ${FLAGS.join(" ")} against 1 mocker × ${WORKERS} workers + kv frontend, speedup 1; median of ${runs} fresh stacks`);
console.log(formatPrediction(merged));
