// Replay throughput (issue 4 figures). Prints, for each scenario, wall and CPU time of the whole
// `replay` path (read + parse the trace, simulate, build the report) and the simulated time.
//   (a) first 1,000 requests of the Mooncake conversation trace, 1 worker, block size 512:
//       target ≤ 1.3 s wall (the figure Dynamo's Rust mocker is reported at; not run here)
//   (b) the whole trace (12,031 requests), 8 workers, kv routing, engine defaults (block size
//       64, as `kvcr-mock replay --trace … --num-workers 8 --router-mode kv` runs it): target
//       ≥ 2,000 simulated req/s. Also printed at block size 512 (8× fewer blocks), for comparison.
// Run: npx bun bench/replay.ts [runs=3]
import { readFileSync, writeFileSync } from "node:fs";
import { resolve } from "node:path";
import { createLogger } from "../src/lib/logger.ts";
import { createBlockHasher } from "../src/lib/xxh3.ts";
import { runReplay, type ReplayOptions } from "../src/roles/replay/run-replay.ts";

const TRACE = resolve(import.meta.dir, "../test/fixtures/traces/mooncake_conversation_trace.jsonl");
const DYNAMO_REFERENCE_S = 1.3;
const runs = Number(process.argv[2] ?? 3);

const base: ReplayOptions = {
  trace: TRACE,
  traceBlockSize: 512,
  skipBadLines: false,
  synthetic: { numPrefixes: 1, prefixTokens: 1, suffixTokens: 1, outputTokens: 1 },
  arrivalSpeedupRatio: 1,
  numWorkers: 1,
  routerMode: "round-robin",
  prefillLoadScale: 1,
  routerTemperature: 0,
  engine: { blockSize: 512 },
  seed: 0,
};

async function measure(name: string, opts: ReplayOptions) {
  const walls: number[] = [];
  const cpus: number[] = [];
  let last;
  for (let i = 0; i < runs; i++) {
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    last = await runReplay(opts, {
      hasher: createBlockHasher(),
      readFile: (p) => readFileSync(p, "utf8"),
      writeFile: (p, t) => writeFileSync(p, t),
      checkWritable: () => {},
      stdout: { write: () => true },
      logger: createLogger({ level: "warn" }),
      now: () => performance.now(),
    });
    walls.push((performance.now() - t0) / 1000);
    const cpu = process.cpuUsage(cpu0);
    cpus.push((cpu.user + cpu.system) / 1e6);
  }
  const best = Math.min(...walls);
  const median = [...walls].sort((a, b) => a - b)[Math.floor(walls.length / 2)]!;
  console.log(`${name}`);
  console.log(`  requests ${last!.completed} ok / ${last!.failed} failed, simulated time ${last!.simulated_time_s.toFixed(1)} s, reuse ${last!.prefix_cache_reuse_ratio.toFixed(4)}, spread [${last!.requests_per_worker.join(" ")}]`);
  console.log(`  wall s   best ${best.toFixed(3)}  median ${median.toFixed(3)}  (runs: ${walls.map((w) => w.toFixed(3)).join(", ")})`);
  console.log(`  cpu s    best ${Math.min(...cpus).toFixed(3)}  (user+sys; differs from wall when the machine is shared)`);
  console.log(`  simulated requests per wall second (best run): ${(last!.completed / best).toFixed(0)}`);
  return { best, completed: last!.completed };
}

console.log(`bun ${Bun.version}, ${runs} run(s) each\n`);
const a = await measure("(a) conversation trace, first 1,000 requests, 1 worker, block 512", { ...base, requests: 1000 });
console.log(`  vs Dynamo Rust mocker reference ${DYNAMO_REFERENCE_S} s: ${(DYNAMO_REFERENCE_S / a.best).toFixed(2)}× (target ≤ ${DYNAMO_REFERENCE_S} s)\n`);
const b = await measure("(b) conversation trace, all 12,031 requests, 8 workers, kv routing, block size 64 (engine defaults)", { ...base, numWorkers: 8, routerMode: "kv", engine: {} });
console.log(`  target ≥ 2,000 simulated req/s: ${b.completed / b.best >= 2000 ? "met" : "NOT met"}\n`);
await measure("(b') same as (b) but block size 512 (comparison only: 8× fewer blocks per request)", { ...base, numWorkers: 8, routerMode: "kv" });
