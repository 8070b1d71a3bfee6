// Sessions through replay (the core simulator on a virtual clock, as `kvcr-mock replay` runs it):
// 1. replay speed on session traces of over 10,000 turns: Mooncake rows with session_id and delay
//    (parsed from JSONL text, as --trace reads them) and the synthetic agentic workload, per router;
// 2. prefix-cache reuse and mean TTFT per turn index, kv vs round-robin vs the oracle, on the
//    agentic workload and on builtin:sample-sessions, with the verdict round-robin vs kv over
//    `rounds` seeds (requests resampled within each, as bench states one).
// Replay is deterministic: machine load changes the wall times only.
// Run: npx bun bench/replay-sessions.ts [rounds=3]
import { readFileSync } from "node:fs";
import type { ReplayReport } from "../src/core/replay/report.ts";
import type { RoundSamples } from "../src/core/stats/run-samples.ts";
import { compareSides, type VerdictEntry } from "../src/core/stats/verdict.ts";
import { createRng } from "../src/core/random/rng.ts";
import { parseTrace } from "../src/core/workload/sessions/parse-trace.ts";
import type { WorkloadRequest } from "../src/core/workload/workload.ts";
import { createLogger } from "../src/lib/logger.ts";
import { createBlockHasher } from "../src/lib/xxh3.ts";
import { entryText } from "../src/roles/shared/measure/verdict-text.ts";
import { simulateStackWithSamples, type SimulatedStack } from "../src/roles/shared/measure/simulated-stack.ts";
import { loadWorkload, type WorkloadOptions } from "../src/roles/shared/measure/workload.ts";
import type { ArrivalSpec } from "../src/core/workload/arrivals.ts";
import { machineLine } from "./lib/machine.ts";

const hasher = createBlockHasher();
const logger = createLogger({ level: "warn" });
const started = performance.now();
const rounds = Number((process.argv[2] ?? "3").replace(/^rounds=/, ""));
if (!Number.isInteger(rounds) || rounds < 1) throw new Error(`rounds: got ${process.argv[2]}, expected a positive integer`);
const f = (x: number, d = 1) => x.toFixed(d);
type Mode = "kv" | "round-robin" | "oracle";

/** A Mooncake session trace as text: `sessions` × `turns`, each turn's hash ids extending the previous turn's. */
function sessionTraceText(sessions: number, turns: number, seed: number): string {
  const rng = createRng(seed);
  const rows: string[] = [];
  let next = 1000;
  for (let s = 0; s < sessions; s++) {
    let ids = [(s % 8) * 2, (s % 8) * 2 + 1];
    for (let t = 1; t <= turns; t++) {
      ids = [...ids, ...Array.from({ length: 1 + rng.int(2) }, () => next++)];
      const head = t === 1 ? { timestamp: Math.round(s * 250 + rng.next() * 200) } : { delay: Math.round(1000 + rng.next() * 4000) };
      rows.push(JSON.stringify({ session_id: `s${s}`, ...head, input_length: ids.length * 512 - rng.int(512), output_length: 32 + rng.int(224), hash_ids: ids }));
    }
  }
  return rows.join("\n");
}

const stack = (routerMode: Mode, numWorkers: number, engine: SimulatedStack["engine"] = {}): SimulatedStack => ({ numWorkers, routerMode, engine });
function run(workload: readonly WorkloadRequest[], s: SimulatedStack, arrival: ArrivalSpec, seed: number): { report: ReplayReport; samples: RoundSamples } {
  return simulateStackWithSamples(workload, s, { arrival, seed, startedMs: performance.now() }, { hasher, now: () => performance.now() });
}

// 1. Replay speed.
const speedRows = ["| workload | turns | sessions | router | parse (s) | wall (s) | simulated (s) | replay speed (turns/s) | reuse |", "|---|---|---|---|---|---|---|---|---|"];
{
  const t0 = performance.now();
  const text = sessionTraceText(2000, 6, 1);
  const parsed = parseTrace(text, { format: "auto", traceBlockSize: 512, defaultOutputTokens: 128 });
  const parseS = (performance.now() - t0) / 1000;
  if (parsed.errors.length > 0 || parsed.requests.length < 10_000) throw new Error(`session trace: ${parsed.errors.length} errors, ${parsed.requests.length} turns`);
  for (const mode of ["kv", "round-robin"] as const) {
    const { report: r } = run(parsed.requests, stack(mode, 16), { kind: "trace", speedupRatio: 1 }, 0);
    speedRows.push(`| Mooncake rows with sessions (2,000 × 6, 512-token blocks) | ${parsed.requests.length} | ${parsed.sessions} | ${mode} | ${f(parseS, 2)} | ${f(r.wall_time_s, 2)} | ${f(r.simulated_time_s, 0)} | ${f(r.replay_speed_requests_per_s, 0)} | ${f(r.prefix_cache_reuse_ratio, 3)} |`);
  }
  const agentic: WorkloadOptions = { traceBlockSize: 512, skipBadLines: false, seed: 0, synthetic: { numPrefixes: 8, prefixTokens: 1024, suffixTokens: 256, outputTokens: 128 }, agentic: { sessions: 2000, turns: 6, toolTokens: 512, thinkTimeMs: 2000, numPrefixes: 8, prefixTokens: 1024, suffixTokens: 256, outputTokens: 128 } };
  const w = loadWorkload(agentic, { readFile: (p) => readFileSync(p, "utf8"), logger });
  for (const mode of ["kv", "round-robin"] as const) {
    const { report: r } = run(w, stack(mode, 16), { kind: "rate", requestsPerSecond: 20 }, 0);
    speedRows.push(`| agentic (2,000 × 6, --request-rate 20 sessions/s) | ${w.length} | 2000 | ${mode} | - | ${f(r.wall_time_s, 2)} | ${f(r.simulated_time_s, 0)} | ${f(r.replay_speed_requests_per_s, 0)} | ${f(r.prefix_cache_reuse_ratio, 3)} |`);
  }
}

// 2. Reuse per turn index: kv vs round-robin vs oracle, verdict over seeds.
interface Case {
  name: string;
  flags: string;
  workload(seed: number): WorkloadRequest[];
  arrival: ArrivalSpec;
  workers: number;
  engine: SimulatedStack["engine"];
}
const agenticCase: Case = {
  name: "agentic",
  flags: "--sessions 200 --turns 8 --tool-tokens 256 --think-time-ms 2000 --num-prefixes 4 --prefix-tokens 512 --suffix-tokens 256 --output-tokens 128 --request-rate 2 --num-workers 8 --num-gpu-blocks-override 2048 --block-size 16",
  workload: (seed) => loadWorkload({ traceBlockSize: 512, skipBadLines: false, seed, synthetic: { numPrefixes: 4, prefixTokens: 512, suffixTokens: 256, outputTokens: 128 }, agentic: { sessions: 200, turns: 8, toolTokens: 256, thinkTimeMs: 2000, numPrefixes: 4, prefixTokens: 512, suffixTokens: 256, outputTokens: 128 } }, { readFile: () => "", logger }),
  arrival: { kind: "rate", requestsPerSecond: 2 },
  workers: 8,
  engine: { numGpuBlocks: 2048, blockSize: 16 },
};
const sampleCase: Case = {
  name: "builtin:sample-sessions",
  flags: "--trace builtin:sample-sessions --num-workers 4 --num-gpu-blocks-override 4096 --block-size 16",
  workload: () => loadWorkload({ trace: "builtin:sample-sessions", traceBlockSize: 512, skipBadLines: false, seed: 0, synthetic: { numPrefixes: 1, prefixTokens: 1, suffixTokens: 0, outputTokens: 1 } }, { readFile: (p) => readFileSync(p, "utf8"), logger }),
  arrival: { kind: "trace", speedupRatio: 1 },
  workers: 4,
  engine: { numGpuBlocks: 4096, blockSize: 16 },
};

const turnRows: string[] = [];
const verdicts: string[] = [];
for (const c of [agenticCase, sampleCase]) {
  const reports = Object.fromEntries((["kv", "round-robin", "oracle"] as const).map((m) => [m, run(c.workload(0), stack(m, c.workers, c.engine), c.arrival, 0).report]));
  turnRows.push(`\n${c.name}: kvcr-mock replay ${c.flags} --router-mode kv|round-robin|oracle`);
  turnRows.push("| turn | turns run | mean prompt tokens | reuse kv | reuse round-robin | reuse oracle | mean TTFT kv (ms) | mean TTFT round-robin (ms) | mean TTFT oracle (ms) |", "|---|---|---|---|---|---|---|---|---|");
  const per = (m: Mode) => reports[m]!.sessions!.per_turn;
  per("kv").forEach((t, k) => {
    const [rr, or] = [per("round-robin")[k]!, per("oracle")[k]!];
    turnRows.push(`| ${t.turn} | ${t.completed} | ${f(t.mean_prompt_tokens, 0)} | ${f(t.prefix_cache_reuse_ratio!, 3)} | ${f(rr.prefix_cache_reuse_ratio!, 3)} | ${f(or.prefix_cache_reuse_ratio!, 3)} | ${f(t.mean_ttft_ms)} | ${f(rr.mean_ttft_ms)} | ${f(or.mean_ttft_ms)} |`);
  });
  const all = (m: Mode) => `${f(reports[m]!.prefix_cache_reuse_ratio, 3)} / ${f(reports[m]!.mean_ttft_ms)} ms / session ${f(reports[m]!.sessions!.mean_session_time_s, 1)} s`;
  turnRows.push(`| all | ${reports.kv!.completed} | | kv ${all("kv")} | round-robin ${all("round-robin")} | oracle ${all("oracle")} | | | |`);
  const sides = (["kv", "round-robin"] as const).map((m) => ({ label: m, rounds: Array.from({ length: rounds }, (_, k) => run(c.workload(k), stack(m, c.workers, c.engine), c.arrival, k).samples) }));
  const v = compareSides(sides, { seed: 0, paired: true });
  const shown = (e: VerdictEntry) => e.metric === "mean_ttft_ms" || e.metric === "prefix_cache_reuse_ratio" || e.call === "higher" || e.call === "lower";
  verdicts.push(`${c.name}: round-robin vs kv over ${rounds} seed(s): ${v.entries.filter(shown).map(entryText).join("; ")}`);
}

console.log("Replay speed on session traces (closed-loop turns on the virtual clock, 16 workers):");
console.log(speedRows.join("\n"));
console.log("\nReuse and TTFT per turn index (first seed), kv vs round-robin vs oracle:");
console.log(turnRows.join("\n"));
console.log(`\nVerdicts (95 % family-wise, Holm):\n${verdicts.join("\n")}`);
console.log(machineLine(`wall time ${((performance.now() - started) / 1000).toFixed(1)} s`));
