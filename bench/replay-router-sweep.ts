// kv vs round-robin through replay's simulation (the core simulator on a virtual clock, as
// `kvcr-mock replay` runs it): the two workloads of bench/router-modes.ts with the same requests
// and stack settings (bench/lib/router-scenarios.ts), at concurrency 2, 8 and 32, so each row
// sits beside its live figure. Then the shared-prefix workload at 400 requests and concurrency
// 2, 4, 8, 16 and 32 beside reference figures (quoted, not run here) that an earlier replay
// prototype of the same cost model produced on the same workload, and the Mooncake head at 400
// requests. Replay is deterministic (seeded workload, seeded tie
// breaks, virtual clock): one run per figure, and machine load does not change them. Each row
// also runs the oracle (kv priced on the engines' true state, replay only: the bound) and gives
// kv's regret against the oracle view (share routed to a best-cache worker, mean regret in blocks).
// Each row ends with its verdict (round-robin vs kv over `rounds` seeds: the workload and the
// router's tie breaks drawn with seed, seed + 1, …; requests resampled within each), as bench
// states one; the other figures are the first seed's.
// Run: npx bun bench/replay-router-sweep.ts [rounds=3]
import { readFileSync } from "node:fs";
import type { ReplayReport } from "../src/core/replay/report.ts";
import type { RoundSamples } from "../src/core/stats/run-samples.ts";
import { compareSides, type VerdictEntry } from "../src/core/stats/verdict.ts";
import { createLogger } from "../src/lib/logger.ts";
import { createBlockHasher } from "../src/lib/xxh3.ts";
import { entryText } from "../src/roles/shared/measure/verdict-text.ts";
import { simulateStackWithSamples } from "../src/roles/shared/measure/simulated-stack.ts";
import { loadWorkload } from "../src/roles/shared/measure/workload.ts";
import { machineLine } from "./lib/machine.ts";
import { MODES, SCENARIOS, simulatedStackOf, SWEEP, type RouterScenario } from "./lib/router-scenarios.ts";

const hasher = createBlockHasher();
const logger = createLogger({ level: "warn" });
const started = performance.now();
const roundsArg = process.argv[2] ?? "3";
const rounds = Number(roundsArg.replace(/^rounds=/, ""));
if (!Number.isInteger(rounds) || rounds < 1) throw new Error(`rounds: got ${JSON.stringify(roundsArg)}, expected a positive integer (e.g. 3 or rounds=3)`);

/** One simulated run; `round` k draws the workload and the router's choices with seed + k − 1. */
function replayRun(sc: RouterScenario, requests: number, concurrency: number, mode: (typeof MODES)[number] | "oracle", round = 1): { report: ReplayReport; samples: RoundSamples } {
  const seed = sc.workload.seed + round - 1;
  const workload = loadWorkload({ ...sc.workload, requests, seed }, { readFile: (p) => readFileSync(p, "utf8"), logger });
  // The oracle is kv's stack and tuning with the oracle view for an index (`up` has no oracle mode).
  const stack = mode === "oracle" ? { ...simulatedStackOf(sc, "kv"), routerMode: "oracle" as const } : simulatedStackOf(sc, mode);
  return simulateStackWithSamples(workload, stack, { arrival: { kind: "concurrency", concurrency }, seed, regret: round === 1, startedMs: performance.now() }, { hasher, now: () => performance.now() });
}
const replay = (sc: RouterScenario, requests: number, concurrency: number, mode: (typeof MODES)[number] | "oracle") => replayRun(sc, requests, concurrency, mode).report;

/** round-robin vs kv over `rounds` seeds: the called figures, or that there is no clear difference in mean TTFT. */
function verdictCell(sc: RouterScenario, requests: number, c: number): string {
  const [kv, rr] = MODES.map((m) => ({ label: m, rounds: Array.from({ length: rounds }, (_, k) => replayRun(sc, requests, c, m, k + 1).samples) }));
  const v = compareSides([kv!, rr!], { seed: sc.workload.seed, paired: true });
  const shown = (e: VerdictEntry) => e.metric === "mean_ttft_ms" || e.metric === "prefix_cache_reuse_ratio" || e.call === "higher" || e.call === "lower";
  return v.entries.filter(shown).map(entryText).join("; ");
}

/** Quoted reference (not run here): an earlier prototype's reuse kv, rr and mean TTFT kv/rr at 400 requests. */
const REFERENCE = new Map<number, { kvReuse: number; rrReuse: number; kvOverRr: number }>([
  [2, { kvReuse: 0.87, rrReuse: 0.45, kvOverRr: 0.47 }],
  [4, { kvReuse: 0.58, rrReuse: 0.45, kvOverRr: 0.85 }],
  [16, { kvReuse: 0.75, rrReuse: 0.45, kvOverRr: 0.8 }],
  [32, { kvReuse: 0.82, rrReuse: 0.44, kvOverRr: 0.62 }],
]);

const f = (x: number, d = 1) => x.toFixed(d);
const rows: string[] = [
  `| workload | requests | concurrency | kv mean TTFT (ms) | rr mean TTFT (ms) | rr/kv | kv reuse | rr reuse | oracle mean TTFT (ms) | oracle reuse | kv best-cache share / mean regret (blocks) | oracle best-cache share / mean regret (blocks) | quoted reference kv/rr TTFT (inverse of rr/kv) | quoted reference reuse kv / rr | verdict, round-robin vs kv over ${rounds} seed(s) |`,
  "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
];
function row(sc: RouterScenario, requests: number, c: number, withReference = false): void {
  const [kv, rr] = MODES.map((m) => replay(sc, requests, c, m));
  const oracle = replay(sc, requests, c, "oracle");
  const regretOf = (r: ReplayReport) => (r.regret ? `${f(r.regret.best_cache_share, 3)} / ${f(r.regret.mean_blocks, 2)}` : "-");
  const ref = withReference ? REFERENCE.get(c) : undefined;
  const refCells = withReference ? (ref ? [`${f(ref.kvOverRr, 2)} (here ${f(kv!.mean_ttft_ms / rr!.mean_ttft_ms, 2)})`, `${f(ref.kvReuse, 2)} / ${f(ref.rrReuse, 2)}`] : ["- (none given)", "-"]) : ["", ""];
  const failed = kv!.failed + rr!.failed + oracle.failed > 0 ? ` (failed kv ${kv!.failed}, rr ${rr!.failed}, oracle ${oracle.failed})` : "";
  rows.push(`| ${sc.name} | ${requests} | ${c} | ${f(kv!.mean_ttft_ms)} | ${f(rr!.mean_ttft_ms)} | ${f(rr!.mean_ttft_ms / kv!.mean_ttft_ms, 2)}×${failed} | ${f(kv!.prefix_cache_reuse_ratio, 3)} | ${f(rr!.prefix_cache_reuse_ratio, 3)} | ${f(oracle.mean_ttft_ms)} | ${f(oracle.prefix_cache_reuse_ratio, 3)} | ${regretOf(kv!)} | ${regretOf(oracle)} | ${refCells.join(" | ")} | ${verdictCell(sc, requests, c)} |`);
}

// Beside the live sweep: same requests per point as bench/router-modes.ts.
for (const sc of SCENARIOS) for (const c of SWEEP) row(sc, sc.requestsAt(c), c);
// Longer runs: the shared-prefix sweep of the reference figures, and the Mooncake head at 400.
const [sharedPrefix, mooncake] = SCENARIOS as [RouterScenario, RouterScenario];
for (const c of [2, 4, 8, 16, 32]) row(sharedPrefix, 400, c, true);
for (const c of SWEEP) row(mooncake, 400, c);

console.log(`kv vs round-robin (and the oracle bound), replay (virtual clock, deterministic: the first seed's run per figure; verdicts over ${rounds} seeds, 95 % family-wise, Holm); ${MODES.length + 1} modes × 4 workers`);
for (const sc of SCENARIOS) console.log(`${sc.name}: ${sc.describe}\n  = kvcr-mock replay ${sc.replayFlags} --concurrency <c> --router-mode kv|round-robin|oracle`);
console.log(rows.join("\n"));
console.log(machineLine(`wall time ${((performance.now() - started) / 1000).toFixed(1)} s`));
