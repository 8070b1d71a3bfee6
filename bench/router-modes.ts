// kv vs round-robin routing on live stacks, swept over concurrency 2, 8 and 32 on two workloads
// (bench/lib/router-scenarios.ts): a shared-prefix workload and the head of the Mooncake
// conversation trace run closed loop. Each mode and point gets a fresh stack started by the
// launcher's code as `bench --compare-router-modes` starts it (1 mocker process × 4 workers at
// speedup 1, one frontend; cold caches) and the same seeded workload; kv and round-robin run back
// to back at each point, so machine load hits both alike and the ratio between them holds.
//
// Request counts keep a default run (3 rounds) near 13 minutes on a 2-core machine (the mockers
// run in real time, so wall time is the simulated serving time):
//   - shared-prefix: 160 requests (10 per prefix) at every point, ~55 s per mode and round;
//     enough for the 16 prefixes' cold misses to be a small share of the run.
//   - Mooncake: max(16, 4 × concurrency) requests (16, 32, 128), ~70 s per mode and round;
//     a request takes ~1.4 s of wall time at concurrency 2 against ~0.3 s at 32, so one count for
//     all points would either dwarf the budget at 2 or leave 32 a single burst.
// Each figure is the median of `runs` rounds; the rr/kv column is the ratio of those medians,
// with the spread of the per-round ratios beside it. bench/replay-router-sweep.ts simulates the
// same runs with replay. The HTML report of the last round of each point is written to
// dist/bench-router-modes-<workload>-c<concurrency>.html.
// Run: npm run bench:router-modes [-- [runs=]3 [workload]]
import { mkdirSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { resolve } from "node:path";
import { freshStackStarter } from "../src/cli/bench-stack.ts";
import { createLogger } from "../src/lib/logger.ts";
import type { BenchResult } from "../src/roles/bench/metrics.ts";
import { runBench } from "../src/roles/bench/run-bench.ts";
import type { BenchOptions } from "../src/roles/bench/bench-types.ts";
import { quietBenchDeps, scriptBenchOptions } from "./lib/quiet-bench.ts";
import { machineLine } from "./lib/machine.ts";
import { median, MODES, SCENARIOS, stackFileOf, SWEEP, WORKERS } from "./lib/router-scenarios.ts";

const ROOT = resolve(import.meta.dir, "..");
const runsArg = process.argv[2] ?? "3";
const runs = Number(runsArg.replace(/^runs=/, ""));
const only = process.argv[3];
if (!Number.isInteger(runs) || runs < 1) throw new Error(`runs: got ${JSON.stringify(runsArg)}, expected a positive integer (e.g. 3 or runs=3)`);
const scenarios = SCENARIOS.filter((x) => only === undefined || x.name === only);
if (scenarios.length === 0) throw new Error(`unknown workload ${JSON.stringify(only)}; one of ${SCENARIOS.map((s) => s.name).join(", ")}`);

const logger = createLogger({ level: "warn" });
mkdirSync(resolve(ROOT, "dist"), { recursive: true });
const started = performance.now();
const loadAtStart = loadavg()[0]!;
let highestLoad = loadAtStart;

const fmt = (x: number, d = 1) => (Number.isFinite(x) ? x.toFixed(d) : "-");
const lines: string[] = [];
for (const sc of scenarios) {
  const file = stackFileOf(sc);
  // byPoint.get(c).get(mode) = that point's results, one per round.
  const byPoint = new Map<number, Map<string, BenchResult[]>>(SWEEP.map((c) => [c, new Map(MODES.map((m) => [m, [] as BenchResult[]]))]));
  try {
    const startStack = freshStackStarter(file.path, logger, process.env);
    // Rounds outermost: a drift in machine load spreads over every point instead of one.
    for (let round = 0; round < runs; round++) {
      for (const c of SWEEP) {
        const opts = scriptBenchOptions({
          targets: MODES.map((m) => ({ label: m, fresh: { routerMode: m } })),
          workload: { ...sc.workload, requests: sc.requestsAt(c) },
          concurrency: c,
          report: round === runs - 1 ? resolve(ROOT, `dist/bench-router-modes-${sc.name}-c${c}.html`) : undefined,
        });
        const { results } = await runBench(opts, quietBenchDeps(logger, { writeFile: (p, t) => writeFileSync(p, t), startStack }));
        for (const r of results) byPoint.get(c)!.get(r.label!)!.push(r);
        highestLoad = Math.max(highestLoad, loadavg()[0]!);
        const elapsed = ((performance.now() - started) / 1000).toFixed(0);
        console.error(`[${elapsed} s] ${sc.name} c=${c} round ${round + 1}/${runs}: ${results.map((r) => `${r.label} mean TTFT ${fmt(r.mean_ttft_ms)} ms, reuse ${fmt(r.prefix_cache_reuse_ratio ?? NaN, 3)}, ${r.duration.toFixed(1)} s`).join("; ")}; load ${loadavg()[0]!.toFixed(2)}`);
      }
    }
  } finally {
    file.remove();
  }
  lines.push(`\n${sc.name}: ${sc.describe}; ${WORKERS} workers, speedup 1, median of ${runs} round(s)`);
  lines.push("| concurrency | requests | kv mean TTFT (ms) | rr mean TTFT (ms) | rr/kv | rr/kv per round (min–max) | kv reuse | rr reuse | kv p99 TTFT (ms) | rr p99 TTFT (ms) | failed kv/rr |");
  lines.push("|---|---|---|---|---|---|---|---|---|---|---|");
  for (const c of SWEEP) {
    const [kv, rr] = MODES.map((m) => byPoint.get(c)!.get(m)!);
    const m = (rs: BenchResult[], f: (r: BenchResult) => number) => median(rs.map(f));
    const ttft = (r: BenchResult) => r.mean_ttft_ms;
    const reuse = (r: BenchResult) => r.prefix_cache_reuse_ratio ?? NaN;
    const perRound = kv!.map((k, i) => rr![i]!.mean_ttft_ms / k.mean_ttft_ms);
    lines.push(
      `| ${c} | ${sc.requestsAt(c)} | ${fmt(m(kv!, ttft))} | ${fmt(m(rr!, ttft))} | ${fmt(m(rr!, ttft) / m(kv!, ttft), 2)}× | ${fmt(Math.min(...perRound), 2)}–${fmt(Math.max(...perRound), 2)} | ${fmt(m(kv!, reuse), 3)} | ${fmt(m(rr!, reuse), 3)} | ${fmt(m(kv!, (r) => r.p99_ttft_ms ?? NaN))} | ${fmt(m(rr!, (r) => r.p99_ttft_ms ?? NaN))} | ${m(kv!, (r) => r.failed)}/${m(rr!, (r) => r.failed)} |`,
    );
  }
}
lines.push(`\n${machineLine(`load average ${loadAtStart.toFixed(2)} at the start, at most ${highestLoad.toFixed(2)} after any point; wall time ${((performance.now() - started) / 60_000).toFixed(1)} min`)}`);
console.log(lines.join("\n"));
