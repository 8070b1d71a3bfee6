// kv vs round-robin through replay's simulation (the core simulator on a virtual clock, as
// `kvcr-mock replay` runs it): the two workloads of bench/router-modes.ts with the same requests
// and stack settings (bench/lib/router-scenarios.ts), at concurrency 2, 8 and 32, so each row
// sits beside its live figure. Then the shared-prefix workload at 400 requests and concurrency
// 2, 4, 8, 16 and 32 beside reference figures (quoted, not run here) that an earlier replay
// prototype of the same cost model produced on the same workload, and the Mooncake head at 400
// requests. Replay is deterministic (seeded workload, seeded tie
// breaks, virtual clock): one run per figure, and machine load does not change them. Each row
// also runs the oracle (kv priced on the engines' true state, replay only: the bound) and gives
// kv's regret against the truth (share routed to a best-cache worker, mean regret in blocks).
// Run: npx bun bench/replay-router-sweep.ts
import { readFileSync } from "node:fs";
import type { ReplayReport } from "../src/core/replay/report.ts";
import { createLogger } from "../src/lib/logger.ts";
import { createBlockHasher } from "../src/lib/xxh3.ts";
import { simulateStack } from "../src/roles/simulated-stack.ts";
import { loadWorkload } from "../src/roles/workload.ts";
import { machineLine } from "./lib/machine.ts";
import { MODES, SCENARIOS, simulatedStackOf, SWEEP, type RouterScenario } from "./lib/router-scenarios.ts";

const hasher = createBlockHasher();
const logger = createLogger({ level: "warn" });
const started = performance.now();

function replay(sc: RouterScenario, requests: number, concurrency: number, mode: (typeof MODES)[number] | "oracle"): ReplayReport {
  const workload = loadWorkload({ ...sc.workload, requests }, { readFile: (p) => readFileSync(p, "utf8"), logger });
  // The oracle is kv's stack and tuning with the truth for an index (`up` has no oracle mode).
  const stack = mode === "oracle" ? { ...simulatedStackOf(sc, "kv"), routerMode: "oracle" as const } : simulatedStackOf(sc, mode);
  return simulateStack(workload, stack, { arrival: { kind: "concurrency", concurrency }, seed: sc.workload.seed, regret: true, startedMs: performance.now() }, { hasher, now: () => performance.now() });
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
  "| workload | requests | concurrency | kv mean TTFT (ms) | rr mean TTFT (ms) | rr/kv | kv reuse | rr reuse | oracle mean TTFT (ms) | oracle reuse | kv best-cache share / mean regret (blocks) | oracle best-cache share / mean regret (blocks) | quoted reference kv/rr TTFT (inverse of rr/kv) | quoted reference reuse kv / rr |",
  "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
];
function row(sc: RouterScenario, requests: number, c: number, withReference = false): void {
  const [kv, rr] = MODES.map((m) => replay(sc, requests, c, m));
  const oracle = replay(sc, requests, c, "oracle");
  const regretOf = (r: ReplayReport) => (r.regret ? `${f(r.regret.best_cache_share, 3)} / ${f(r.regret.mean_blocks, 2)}` : "-");
  const ref = withReference ? REFERENCE.get(c) : undefined;
  const refCells = withReference ? (ref ? [`${f(ref.kvOverRr, 2)} (here ${f(kv!.mean_ttft_ms / rr!.mean_ttft_ms, 2)})`, `${f(ref.kvReuse, 2)} / ${f(ref.rrReuse, 2)}`] : ["- (none given)", "-"]) : ["", ""];
  const failed = kv!.failed + rr!.failed + oracle.failed > 0 ? ` (failed kv ${kv!.failed}, rr ${rr!.failed}, oracle ${oracle.failed})` : "";
  rows.push(`| ${sc.name} | ${requests} | ${c} | ${f(kv!.mean_ttft_ms)} | ${f(rr!.mean_ttft_ms)} | ${f(rr!.mean_ttft_ms / kv!.mean_ttft_ms, 2)}×${failed} | ${f(kv!.prefix_cache_reuse_ratio, 3)} | ${f(rr!.prefix_cache_reuse_ratio, 3)} | ${f(oracle.mean_ttft_ms)} | ${f(oracle.prefix_cache_reuse_ratio, 3)} | ${regretOf(kv!)} | ${regretOf(oracle)} | ${refCells.join(" | ")} |`);
}

// Beside the live sweep: same requests per point as bench/router-modes.ts.
for (const sc of SCENARIOS) for (const c of SWEEP) row(sc, sc.requestsAt(c), c);
// Longer runs: the shared-prefix sweep of the reference figures, and the Mooncake head at 400.
const [sharedPrefix, mooncake] = SCENARIOS as [RouterScenario, RouterScenario];
for (const c of [2, 4, 8, 16, 32]) row(sharedPrefix, 400, c, true);
for (const c of SWEEP) row(mooncake, 400, c);

console.log(`kv vs round-robin (and the oracle bound), replay (virtual clock, deterministic: one run per figure); ${MODES.length + 1} modes × 4 workers`);
for (const sc of SCENARIOS) console.log(`${sc.name}: ${sc.describe}\n  = kvcr-mock replay ${sc.replayFlags} --concurrency <c> --router-mode kv|round-robin|oracle`);
console.log(rows.join("\n"));
console.log(machineLine(`wall time ${((performance.now() - started) / 1000).toFixed(1)} s`));
