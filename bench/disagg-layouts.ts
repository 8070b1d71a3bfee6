// Aggregated (4 workers, kv) against disaggregated (2 + 2, both timing modes, an instant pull, 3 + 1,
// 1 + 3) replay of the Mooncake conversation head (400 requests) at 3× arrival density, then the
// verdict of 2 + 2 against agg. Deterministic. Run: npx bun bench/disagg-layouts.ts [requests=400]
import { readFileSync } from "node:fs";
import { createLogger } from "../src/lib/logger.ts";
import { createBlockHasher } from "../src/lib/xxh3.ts";
import { runLayouts, type LayoutOptions, type LayoutReport } from "../src/roles/replay/layouts.ts";
import { loadWorkload } from "../src/roles/shared/measure/workload.ts";
import { machineLine } from "./lib/machine.ts";

const requests = Number((process.argv[2] ?? "400").replace(/^requests=/, ""));
if (!Number.isInteger(requests) || requests < 1) throw new Error(`requests: got ${JSON.stringify(process.argv[2])}, expected a positive integer`);
const hasher = createBlockHasher();
const logger = createLogger({ level: "warn" });
// The synthetic settings are unused: the trace is the workload.
const workload = loadWorkload({ trace: "builtin:mooncake-conversation", traceBlockSize: 512, skipBadLines: false, synthetic: { numPrefixes: 1, prefixTokens: 0, suffixTokens: 1, outputTokens: 1 }, requests, seed: 0 }, { readFile: (p) => readFileSync(p, "utf8"), logger });
// replay's defaults (block size 64, G1 16,384 blocks, kv router).
const stack = { numWorkers: 4, routerMode: "kv" as const, engine: {} };
const run = { arrival: { kind: "trace" as const, speedupRatio: 3 }, seed: 0 };
const deps = { hasher, now: () => performance.now() };

interface Row {
  label: string;
  report: LayoutReport;
  wallS: number;
}

const rows: Row[] = [];
function layout(label: string, o: LayoutOptions, name: "agg" | "disagg"): LayoutReport {
  const t0 = performance.now();
  const out = runLayouts(workload, stack, o, run, deps);
  const report = out.reports[name]!;
  rows.push({ label, report, wallS: (performance.now() - t0) / 1000 });
  return report;
}

const split = (p: number, d: number, gbps = 64, mode: LayoutOptions["kvTransferTimingMode"] = "full_prompt"): LayoutOptions => ({ prefillWorkers: p, decodeWorkers: d, kvTransferBandwidthGbps: gbps, kvTransferTimingMode: mode });
layout("agg, 4 workers (kv)", { ...split(2, 2), compare: ["agg"] }, "agg");
layout("2 + 2, full_prompt, 64 GB/s", split(2, 2), "disagg");
layout("2 + 2, destination_missing, 64 GB/s", split(2, 2, 64, "destination_missing"), "disagg");
layout("2 + 2, instant pull", split(2, 2, 0), "disagg");
layout("3 + 1, full_prompt, 64 GB/s", split(3, 1), "disagg");
layout("1 + 3, full_prompt, 64 GB/s", split(1, 3), "disagg");

const f = (x: number) => x.toFixed(1);
console.log(`Mooncake conversation, first ${requests} requests, 3× arrival density, 4 workers (virtual clock)\n`);
console.log("| layout | mean TTFT (ms) | p90 TTFT (ms) | mean ITL (ms) | p90 ITL (ms) | p99 ITL (ms) | mean pull (ms) | pulled (GB) | wall (s) |");
console.log("|---|---|---|---|---|---|---|---|---|");
for (const { label, report: r, wallS } of rows) {
  const d = r.disaggregation;
  console.log(`| ${label} | ${f(r.mean_ttft_ms)} | ${f(r.p90_ttft_ms)} | ${f(r.mean_itl_ms)} | ${f(r.p90_itl_ms)} | ${f(r.p99_itl_ms)} | ${d ? f(d.mean_kv_transfer_ms) : "–"} | ${d ? (d.kv_transfer_bytes / 1e9).toFixed(1) : "–"} | ${wallS.toFixed(2)} |`);
}
const { verdict } = runLayouts(workload, stack, { ...split(2, 2), compare: ["agg", "disagg"] }, run, deps);
console.log("\nVerdict (2 + 2 full_prompt vs agg; one replay per side, request noise only):");
for (const e of verdict!.entries) console.log(`  ${e.metric}: ${e.ratio?.toFixed(2)}× ${e.call}${e.ci_low !== null && e.ci_high !== null ? ` (${e.ci_low.toFixed(2)}–${e.ci_high.toFixed(2)})` : ""}`);
console.log(`\n${machineLine()}`);
