// Replay throughput. The headline is what a user gets: `kvcr-mock replay …` end to end in a cold
// process (the compiled binary dist/kvcr-mock when it exists, else `bun src/cli.ts`), from spawn
// to exit: start-up, trace read and parse, simulation, report. Beside it, the warm in-process
// figure (runReplay called again in this process after a warm-up run: JIT hot, no start-up).
//   (a) first 1,000 requests of the Mooncake conversation trace, 1 worker, block size 512. Dynamo's
//       Rust mocker is published at ≈ 1.3 s for this run: a published anchor, not run here.
//   (b) the whole trace (12,031 requests), 8 workers, kv routing, engine defaults (block size 64,
//       16,384 G1 blocks per worker = 1 M tokens): target ≥ 2,000 simulated requests per second.
//   (b') the same at block size 512 with the G1 cache held at 1 M tokens (2,048 blocks), so only
//       the block granularity changes (8× fewer, larger blocks), not the cache size in tokens.
// Run: npx bun bench/replay.ts [runs=3]
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { resolve } from "node:path";
import { createLogger } from "../src/lib/logger.ts";
import { createBlockHasher } from "../src/lib/xxh3.ts";
import type { ReplayReport } from "../src/core/replay/report.ts";
import { runReplay, type ReplayOptions } from "../src/roles/replay/run-replay.ts";

const ROOT = resolve(import.meta.dir, "..");
const TRACE = resolve(ROOT, "traces/mooncake_conversation_trace.jsonl");
const BINARY = resolve(ROOT, "dist/kvcr-mock");
const DYNAMO_PUBLISHED_S = 1.3;
const runs = Math.max(1, Number(process.argv[2] ?? 3));
const cli = existsSync(BINARY) ? [BINARY] : [process.execPath, resolve(ROOT, "src/cli.ts")];

interface Scenario {
  name: string;
  flags: string[];
  opts: ReplayOptions;
}

const base: ReplayOptions = {
  trace: TRACE,
  traceBlockSize: 512,
  skipBadLines: false,
  synthetic: { numPrefixes: 1, prefixTokens: 1, suffixTokens: 1, outputTokens: 1 },
  arrivalSpeedupRatio: 1,
  numWorkers: 1,
  routerMode: "round-robin",
  engine: { blockSize: 512 },
  seed: 0,
};

const scenarios: Scenario[] = [
  {
    name: "(a) conversation trace, first 1,000 requests, 1 worker, block 512",
    flags: ["--requests", "1000", "--num-workers", "1", "--router-mode", "round-robin", "--block-size", "512"],
    opts: { ...base, requests: 1000 },
  },
  {
    name: "(b) conversation trace, all 12,031 requests, 8 workers, kv routing, engine defaults (block 64, 16,384 blocks = 1 M tokens)",
    flags: ["--num-workers", "8", "--router-mode", "kv"],
    opts: { ...base, numWorkers: 8, routerMode: "kv", engine: {} },
  },
  {
    name: "(b') as (b) at block 512, G1 held at 1 M tokens (2,048 blocks of 512)",
    flags: ["--num-workers", "8", "--router-mode", "kv", "--block-size", "512", "--num-gpu-blocks-override", "2048"],
    opts: { ...base, numWorkers: 8, routerMode: "kv", engine: { blockSize: 512, numGpuBlocks: 2048 } },
  },
];

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const fmt = (xs: number[]) => xs.map((x) => x.toFixed(3)).join(", ");

async function coldCli(flags: string[]): Promise<{ wallS: number; cpuS: number; report: ReplayReport }> {
  const t0 = performance.now();
  const child = Bun.spawn([...cli, "replay", "--trace", TRACE, ...flags, "--output-json", "-", "--log-level", "warn"], { stdout: "pipe", stderr: "pipe" });
  const out = await new Response(child.stdout).text();
  const code = await child.exited;
  const wallS = (performance.now() - t0) / 1000;
  if (code !== 0) throw new Error(`replay exited ${code}: ${await new Response(child.stderr).text()}`);
  const cpu = child.resourceUsage()!.cpuTime;
  return { wallS, cpuS: Number(cpu.user + cpu.system) / 1e6, report: JSON.parse(out) as ReplayReport };
}

async function warm(opts: ReplayOptions): Promise<{ wallS: number; cpuS: number; report: ReplayReport }> {
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  const report = await runReplay(opts, {
    hasher: createBlockHasher(),
    readFile: (p) => readFileSync(p, "utf8"),
    writeFile: (p, t) => writeFileSync(p, t),
    checkWritable: () => {},
    stdout: { write: () => true },
    logger: createLogger({ level: "warn" }),
    now: () => performance.now(),
  });
  const cpu = process.cpuUsage(cpu0);
  return { wallS: (performance.now() - t0) / 1000, cpuS: (cpu.user + cpu.system) / 1e6, report };
}

const load = () => loadavg().map((x) => x.toFixed(1)).join(" ");
console.log(`bun ${Bun.version}, ${cpus().length} CPUs, load average ${load()}; cold CLI = ${cli.length === 1 ? "dist/kvcr-mock (compiled binary)" : "bun src/cli.ts (no dist/: run npm run build for the binary)"}; ${runs} run(s) each, medians\n`);
const results: { name: string; coldS: number; warmS: number; completed: number }[] = [];
for (const s of scenarios) {
  const cold: number[] = [];
  const coldCpu: number[] = [];
  let report: ReplayReport | undefined;
  for (let i = 0; i < runs; i++) {
    const r = await coldCli(s.flags);
    cold.push(r.wallS);
    coldCpu.push(r.cpuS);
    report = r.report;
  }
  await warm(s.opts); // warm-up: JIT and allocator
  const warmRuns: number[] = [];
  const warmCpu: number[] = [];
  for (let i = 0; i < runs; i++) {
    const w = await warm(s.opts);
    warmRuns.push(w.wallS);
    warmCpu.push(w.cpuS);
  }
  const r = report!;
  console.log(s.name);
  console.log(`  requests ${r.completed} ok / ${r.failed} failed, simulated ${r.simulated_time_s.toFixed(1)} s, reuse ${r.prefix_cache_reuse_ratio.toFixed(4)}, host blocks stored ${r.host_blocks_stored}, spread [${r.requests_per_worker.join(" ")}]`);
  console.log(`  cold CLI end to end   median ${median(cold).toFixed(3)} s  (runs: ${fmt(cold)})  → ${(r.completed / median(cold)).toFixed(0)} simulated req per wall s; CPU (user+sys) median ${median(coldCpu).toFixed(3)} s`);
  console.log(`  warm in-process       median ${median(warmRuns).toFixed(3)} s  (runs: ${fmt(warmRuns)})  → ${(r.completed / median(warmRuns)).toFixed(0)} simulated req per wall s; CPU median ${median(warmCpu).toFixed(3)} s`);
  results.push({ name: s.name, coldS: median(cold), warmS: median(warmRuns), completed: r.completed });
}
const [a, b] = results;
console.log(`\n(a) vs Dynamo's Rust mocker, published ≈ ${DYNAMO_PUBLISHED_S} s (an anchor from its docs, not measured here): cold CLI ${a!.coldS.toFixed(3)} s`);
console.log(`(b) target ≥ 2,000 simulated req/s, cold CLI: ${b!.completed / b!.coldS >= 2000 ? "met" : "NOT met"} (${(b!.completed / b!.coldS).toFixed(0)})`);
console.log(`load average at the end ${load()} (a shared machine slows every figure above)`);
