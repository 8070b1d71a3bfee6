// The frontend's residency index measured by Dynamo's indexer-bench method: a Mooncake trace
// lengthened and duplicated, its KV events made by per-worker mock engines, then one
// deadline-driven replay of lookups and events on a fresh index, drained to the last op. Events go
// through RoutingState.apply (as the feed hands decoded router events over), lookups are the
// router's walk (beginOverlaps over every candidate, endOverlaps). Reported: block ops per second
// completed and offered, lookup service and queue wait p50 / p99, the blocks lookups matched, CPU
// time, and ops per CPU second of the process and of the replaying thread alone (the per-core
// figure: one thread runs every op). `--baseline DIR` alternates every trial with another tree's
// build (e.g. the previous commit's, from `git archive`), fresh index each trial, same corpus.
// Run: bun bench/indexer.ts [--workers 128] [--length-factor 4] [--duplication-factor 1]
//        [--block-size 128] [--gpu-blocks 8192] [--window-ms 750] [--trials 3] [--baseline DIR]
import { readFileSync } from "node:fs";
import { loadavg } from "node:os";
import { parseArgs } from "node:util";
import { createRng } from "../src/core/random/rng.ts";
import { percentile } from "../src/core/replay/stats.ts";
import { parseTraceLine, type TraceRow } from "../src/core/workload/mooncake-trace.ts";
import { createLogger } from "../src/lib/logger.ts";
import { createBlockHasher } from "../src/lib/xxh3.ts";
import { blockOps, buildCorpus, type Corpus } from "./lib/indexer-corpus.ts";
import { machineLine } from "./lib/machine.ts";
import { threadCpuSeconds } from "./lib/thread-cpu.ts";

const { values: a } = parseArgs({
  options: {
    trace: { type: "string", default: new URL("../traces/mooncake_conversation_trace.jsonl", import.meta.url).pathname },
    workers: { type: "string", default: "128" },
    "length-factor": { type: "string", default: "4" },
    "duplication-factor": { type: "string", default: "1" },
    "block-size": { type: "string", default: "128" },
    "gpu-blocks": { type: "string", default: "8192" },
    "window-ms": { type: "string", default: "750" },
    trials: { type: "string", default: "3" },
    baseline: { type: "string" },
  },
});
const num = (name: keyof typeof a) => {
  const v = Number(a[name]);
  if (!Number.isInteger(v) || v < 1) throw new Error(`--${name}: expected a positive integer, got ${a[name]}`);
  return v;
};
const WORKERS = num("workers");
const BLOCK = num("block-size");
const WINDOW_MS = num("window-ms");
const TRIALS = num("trials");
const GPU_BLOCKS = num("gpu-blocks");

interface Build {
  name: string;
  // The two classes a trial needs, loaded from that tree's own files.
  RoutingState: new (opts: unknown) => { putWorker(r: unknown): unknown; rankIdOf(w: string, r: number): number; apply(e: unknown): void; index: WalkIndex };
  RankSet: new () => { add(s: number): void };
}
interface WalkIndex {
  beginOverlaps(h: BigUint64Array, n: number, cover?: unknown): { deepest: number };
  endOverlaps(): void;
}
async function loadBuild(name: string, root: string): Promise<Build> {
  const rs = await import(`${root}/src/roles/frontend/routing-state.ts`);
  const ti = await import(`${root}/src/core/index/tier-index.ts`);
  return { name, RoutingState: rs.RoutingState, RankSet: ti.RankSet };
}

const hasher = createBlockHasher();
const rows: TraceRow[] = [];
for (const line of readFileSync(a.trace!, "utf8").split("\n")) {
  if (line.trim() === "") continue;
  const row = parseTraceLine(line, 512);
  if (typeof row === "string") throw new Error(`${a.trace}: ${row}`);
  rows.push(row);
}
const prep0 = performance.now();
const corpus = buildCorpus(rows, { workers: WORKERS, lengthFactor: num("length-factor"), duplicationFactor: num("duplication-factor"), blockSize: BLOCK, gpuBlocks: GPU_BLOCKS, seed: 1 }, hasher);
const T = corpus.totals;
const OPS = blockOps(T);
console.log(
  `corpus: ${rows.length} trace rows × ${a["duplication-factor"]} copies, length ×${a["length-factor"]}, ${WORKERS} workers, block ${BLOCK}, G1 ${a["gpu-blocks"]} blocks each; ` +
    `${T.requests} lookups (${T.requestBlocks} blocks) + ${T.storedEvents} stored (${T.storedBlocks}) + ${T.removedEvents} removed (${T.removedBlocks}) + ${T.clearedEvents} cleared = ${OPS} block ops in ${corpus.batches.length} event batches; built in ${((performance.now() - prep0) / 1000).toFixed(1)} s`,
);
// Each lookup's hashes as its own array, made before timing (the router gets one per request).
const views: BigUint64Array[] = [];
for (let k = 0; k < corpus.batch.length; k++) if (corpus.batch[k] === -1) views[k] = corpus.hashes.subarray(corpus.from[k]!, corpus.from[k]! + corpus.count[k]!);

interface Trial {
  completed: number;
  offered: number;
  keptUp: boolean;
  drainMs: number;
  cpuS: number;
  perCpuS: number;
  /** CPU seconds of the replaying thread alone (NaN where it cannot be read), and ops per such second: the per-core figure. */
  threadS: number;
  perThreadS: number;
  serviceP50: number;
  serviceP99: number;
  waitP50: number;
  waitP99: number;
  /** Blocks the lookups matched (the deepest prefix any rank holds): p50 / p99. */
  depthP50: number;
  depthP99: number;
  /** ns per matched block of lookups that matched ≥ 100 blocks (median): the walk's unit cost. */
  nsPerBlock: number;
  load: number;
}

let sink = 0;
function trial(b: Build, c: Corpus, windowMs: number): Trial {
  const state = new b.RoutingState({ router: { mode: "kv" }, blockSize: BLOCK, hasher, rng: createRng(1), logger: createLogger({ level: "silent" }), now: () => 0 });
  const cover = new b.RankSet();
  for (let w = 0; w < c.workers; w++) {
    state.putWorker({
      worker_id: `w${w}`, worker_index: w, model: "m", worker_type: "mocker", request_url: "http://127.0.0.1:1/v1/generate", data_parallel_size: 1,
      block_size: BLOCK, total_gpu_blocks: GPU_BLOCKS, total_host_blocks: 0, kv_event_source_mode: "direct", raw_endpoints: [], raw_topic: "", capabilities: ["generate"], topology: {},
    });
    cover.add(state.rankIdOf(`w${w}`, 0));
  }
  const index = state.index;
  const n = c.batch.length;
  const service = new Float64Array(c.totals.requests);
  const wait = new Float64Array(c.totals.requests);
  const depth = new Float64Array(c.totals.requests);
  let q = 0;
  const cpu0 = process.cpuUsage();
  const thread0 = threadCpuSeconds?.() ?? NaN;
  const t0 = performance.now();
  for (let k = 0; k < n; k++) {
    const deadline = t0 + c.at[k]! * windowMs;
    let now = performance.now();
    while (now < deadline) now = performance.now();
    const b = c.batch[k]!;
    if (b === -1) {
      const walk = index.beginOverlaps(views[k]!, c.count[k]!, cover);
      depth[q] = walk.deepest;
      index.endOverlaps();
      const end = performance.now();
      service[q] = end - now;
      wait[q++] = now - deadline;
    } else state.apply(c.batches[b]!);
  }
  const elapsedMs = performance.now() - t0;
  const threadS = (threadCpuSeconds?.() ?? NaN) - thread0;
  const cpu = process.cpuUsage(cpu0);
  const cpuS = (cpu.user + cpu.system) / 1e6;
  const ops = blockOps(c.totals);
  const perBlock: number[] = [];
  for (let i = 0; i < q; i++) if (depth[i]! >= 100) perBlock.push((service[i]! * 1e6) / depth[i]!);
  sink += perBlock.length;
  return {
    completed: ops / (elapsedMs / 1000), offered: ops / (windowMs / 1000), keptUp: elapsedMs <= 1.1 * windowMs, drainMs: Math.max(0, elapsedMs - windowMs), cpuS, perCpuS: ops / cpuS, threadS, perThreadS: ops / threadS,
    serviceP50: percentile(service, 50) * 1000, serviceP99: percentile(service, 99) * 1000, waitP50: percentile(wait, 50) * 1000, waitP99: percentile(wait, 99) * 1000,
    depthP50: percentile(depth, 50), depthP99: percentile(depth, 99), nsPerBlock: perBlock.length === 0 ? 0 : percentile(Float64Array.from(perBlock), 50), load: loadavg()[0]!,
  };
}

const M = (x: number) => (x / 1e6).toFixed(2);
function fmt(r: Trial): string {
  return `completed ${M(r.completed)} M block ops/s (offered ${M(r.offered)} M, ${r.keptUp ? "kept up" : `drain ${r.drainMs.toFixed(0)} ms`}), CPU ${r.cpuS.toFixed(2)} s = ${M(r.perCpuS)} M per CPU second (the replaying thread alone ${r.threadS.toFixed(2)} s = ${M(r.perThreadS)} M per second of its core), lookup service p50/p99 ${r.serviceP50.toFixed(2)}/${r.serviceP99.toFixed(2)} µs, queue wait p50/p99 ${r.waitP50.toFixed(0)}/${r.waitP99.toFixed(0)} µs, matched blocks p50/p99 ${r.depthP50.toFixed(0)}/${r.depthP99.toFixed(0)} (${r.nsPerBlock.toFixed(1)} ns per block walked at ≥ 100), load ${r.load.toFixed(2)}`;
}
const builds = [await loadBuild("this build", new URL("..", import.meta.url).pathname.replace(/\/$/, ""))];
if (a.baseline !== undefined) builds.push(await loadBuild(`baseline ${a.baseline}`, a.baseline.replace(/\/$/, "")));
for (const b of builds) trial(b, corpus, WINDOW_MS); // warm-up: each build's code compiled before it is timed
const results = new Map<string, Trial[]>(builds.map((b) => [b.name, []]));
for (let t = 0; t < TRIALS; t++) {
  for (const b of t % 2 === 0 ? builds : [...builds].reverse()) {
    Bun.gc(true); // each trial starts from the same heap state: no collection owed by the previous one
    const r = trial(b, corpus, WINDOW_MS);
    results.get(b.name)!.push(r);
    console.log(`  trial ${t + 1} ${b.name.padEnd(12)} ${fmt(r)}`);
  }
}

const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]!;
const med = (rs: Trial[]): Trial => {
  const pick = (f: (r: Trial) => number) => median(rs.map(f));
  return {
    completed: pick((r) => r.completed), offered: pick((r) => r.offered), keptUp: rs.filter((r) => r.keptUp).length * 2 > rs.length, drainMs: pick((r) => r.drainMs), cpuS: pick((r) => r.cpuS),
    perCpuS: pick((r) => r.perCpuS), threadS: pick((r) => r.threadS), perThreadS: pick((r) => r.perThreadS), serviceP50: pick((r) => r.serviceP50), serviceP99: pick((r) => r.serviceP99), waitP50: pick((r) => r.waitP50), waitP99: pick((r) => r.waitP99),
    depthP50: pick((r) => r.depthP50), depthP99: pick((r) => r.depthP99), nsPerBlock: pick((r) => r.nsPerBlock), load: pick((r) => r.load),
  };
};
for (const b of builds) console.log(`${b.name}: median of ${TRIALS}: ${fmt(med(results.get(b.name)!))}`);
if (builds.length === 2) {
  const [A, B] = builds.map((b) => results.get(b.name)!);
  const ratio = (f: (r: Trial) => number) => median(A!.map((r, i) => f(r) / f(B![i]!))).toFixed(3);
  console.log(`this / baseline, median of paired trials: completed ${ratio((r) => r.completed)}×, ops per CPU second ${ratio((r) => r.perCpuS)}×, per second of the replaying thread ${ratio((r) => r.perThreadS)}×, lookup p50 ${ratio((r) => r.serviceP50)}×, p99 ${ratio((r) => r.serviceP99)}×`);
}
if (sink === -1) console.log("");
console.log(machineLine());
