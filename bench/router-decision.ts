// Routing decision time: a 32-block prompt over 1,000 (worker, rank) candidates with the
// conversation trace's index loaded (every trace request's prompt blocks stored on device at one
// of the 1,000 workers, round-robin) and 8 requests in flight per candidate (trace prompts routed
// by the router itself and never finished, so the load tracker holds ~8,000 prompts). Two
// figures per run, from per-call timings:
//   decide        core Router.route on precomputed hashes (index lookup per tier, costs, selection)
//   hash + decide the frontend's RoutingState.route: hash the 2,048 prompt tokens into block hashes, then decide
// p50 / p99 of wall time over 20,000 decisions, CPU time per decision (steadier when the machine
// is shared) and minor page faults per decision; median of 5 runs. Page faults drive the tail: the
// set-up grows the heap to ~0.6 GB, and until the collector's next cycle every allocation (a block
// hash is a bigint) lands on a page never touched, one fault per 4 kB, costly on a virtual machine. Anchor, not a peer run here: Dynamo publishes
// < 10 µs p99 for its positional indexer lookup alone.
// Run: bun bench/router-decision.ts
import { readFileSync } from "node:fs";
import { createRng } from "../src/core/random/rng.ts";
import { Router } from "../src/core/routing/router.ts";
import { percentile } from "../src/core/replay/stats.ts";
import { parseMooncakeTrace } from "../src/core/workload/mooncake-trace.ts";
import { createLogger } from "../src/lib/logger.ts";
import { createBlockHasher } from "../src/lib/xxh3.ts";
import { RoutingState } from "../src/roles/frontend/routing-state.ts";
import { machineLine } from "./lib/machine.ts";

const WORKERS = 1000;
const BLOCK_SIZE = 64;
const PROMPT_BLOCKS = 32;
const DECISIONS = 20_000;
const RUNS = 5;
const TRACE = new URL("../traces/mooncake_conversation_trace.jsonl", import.meta.url).pathname;

const hasher = createBlockHasher();
const logger = createLogger({ level: "silent" });
const trace = parseMooncakeTrace(readFileSync(TRACE, "utf8")).requests;

const state = new RoutingState({ router: { mode: "kv" }, blockSize: BLOCK_SIZE, hasher, rng: createRng(1), logger, now: () => performance.now() });
for (let w = 0; w < WORKERS; w++) {
  state.putWorker({
    worker_id: `w${w}`, worker_index: w, model: "m", worker_type: "mocker", request_url: "http://127.0.0.1:1/v1/generate", data_parallel_size: 1,
    block_size: BLOCK_SIZE, total_gpu_blocks: 16384, total_host_blocks: 0, kv_event_source_mode: "direct", raw_endpoints: [], raw_topic: "", capabilities: ["generate"], topology: {},
  });
}
const loadStart = performance.now();
const prompts: Uint32Array[] = [];
let stored = 0;
trace.forEach((r, i) => {
  const tokens = new Uint32Array(r.inputLength);
  r.writeTokens(tokens);
  const seq = hasher.hashBlocks(tokens, BLOCK_SIZE).sequence;
  state.index.apply(state.rankIdOf(`w${i % WORKERS}`, 0), { kind: "stored", tier: "device", blockHashes: [...seq] });
  stored += seq.length;
  if (tokens.length >= PROMPT_BLOCKS * BLOCK_SIZE) prompts.push(tokens.slice(0, PROMPT_BLOCKS * BLOCK_SIZE));
});
const loadS = (performance.now() - loadStart) / 1000;
console.log(`index: ${trace.length} trace requests, ${stored} device blocks over ${WORKERS} workers (${state.index.size("device")} distinct per worker summed), loaded in ${loadS.toFixed(1)} s`);
console.log(`queries: ${prompts.length} distinct 32-block prompts (trace prefixes), block size ${BLOCK_SIZE}`);

const router = state.routerOf("m")!;
// In-flight load: 8 trace prompts per candidate, routed and left unfinished (first tokens out).
const INFLIGHT_PER_CANDIDATE = 8;
for (let i = 0; i < WORKERS * INFLIGHT_PER_CANDIDATE; i++) {
  const r = trace[i % trace.length]!;
  const tokens = new Uint32Array(r.inputLength);
  r.writeTokens(tokens);
  const p = state.route("m", tokens);
  if ("status" in p) throw new Error(p.message);
  state.firstToken(p);
}
let activeBlocks = 0;
for (let w = 0; w < WORKERS; w++) activeBlocks += router.activeBlocksOf(state.rankIdOf(`w${w}`, 0));
console.log(`in flight: ${WORKERS * INFLIGHT_PER_CANDIDATE} trace prompts (${INFLIGHT_PER_CANDIDATE} per candidate on average), ${activeBlocks} distinct active blocks`);
const hashed = prompts.map((p) => hasher.hashBlocks(p, BLOCK_SIZE).sequence);
const us = (ms: number) => (ms * 1000).toFixed(1);

function run(kind: "decide" | "hash + decide"): { p50: number; p99: number; cpuUs: number; faults: number } {
  const times = new Float64Array(DECISIONS);
  let cpu0 = process.cpuUsage();
  let faults0 = process.resourceUsage().minorPageFault;
  for (let i = 0; i < DECISIONS + 2000; i++) {
    const k = i % prompts.length;
    const t0 = performance.now();
    if (kind === "decide") {
      const d = router.route({ seqHashes: hashed[k]!, promptTokens: PROMPT_BLOCKS * BLOCK_SIZE, blockSize: BLOCK_SIZE })!;
      if (d !== "overloaded") router.finish(d.request);
    } else {
      const p = state.route("m", prompts[k]!);
      if (!("status" in p)) state.finish(p);
    }
    const dt = performance.now() - t0;
    if (i >= 2000) times[i - 2000] = dt; // first 2,000: warm-up
    if (i === 1999) {
      cpu0 = process.cpuUsage();
      faults0 = process.resourceUsage().minorPageFault;
    }
  }
  const cpu = process.cpuUsage(cpu0);
  const faults = (process.resourceUsage().minorPageFault - faults0) / DECISIONS;
  return { p50: percentile(times, 50), p99: percentile(times, 99), cpuUs: (cpu.user + cpu.system) / DECISIONS, faults };
}

for (const kind of ["decide", "hash + decide"] as const) {
  const runs = Array.from({ length: RUNS }, () => run(kind));
  const med = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  console.log(
    `${kind.padEnd(14)} p50 ${us(med(runs.map((r) => r.p50)))} µs, p99 ${us(med(runs.map((r) => r.p99)))} µs, CPU ${med(runs.map((r) => r.cpuUs)).toFixed(1)} µs per decision (median of ${RUNS} runs; p99 per run: ${runs.map((r) => us(r.p99)).join(", ")} µs; page faults per decision: ${runs.map((r) => r.faults.toFixed(2)).join(", ")})`,
  );
}
console.log(machineLine());
