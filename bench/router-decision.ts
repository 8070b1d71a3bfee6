// Routing decision time: a 32-block prompt over 1,000 (worker, rank) candidates with the
// conversation trace's index loaded (every trace request's prompt blocks stored on device at one
// of the 1,000 workers, round-robin) and 8 requests in flight per candidate (trace prompts routed
// by the router itself and never finished, so the load tracker holds ~8,000 prompts). Two
// figures per run, from per-call timings:
//   decide        core Router.route on precomputed hashes (index lookup per tier, costs, selection)
//   hash + decide the frontend's RoutingState.route: hash the 2,048 prompt tokens into block hashes, then decide
// p50 / p99 of wall time over 20,000 decisions, CPU time per decision (steadier when the machine
// is shared; the deciding thread's own beside the process's), minor page faults and involuntary context switches per 1,000 decisions; median of
// 5 runs. Beside them, the work's own tail: each query is decided about 10 times over the runs,
// and the p50 / p99 of each query's fastest time is what the decision costs without the
// machine's interruptions (a tail there comes from the work; one only in the wall time, from
// preemption, cache contention or collection). `--baseline DIR` loads a second tree's build
// (e.g. the previous commit's, from `git archive`) and alternates every run with it, in this
// process, each build with its own index. Anchor, not a peer run here: Dynamo publishes < 10 µs
// p99 for its positional indexer lookup alone.
// Run: bun bench/router-decision.ts [--baseline DIR] [--runs 5]
import { readFileSync } from "node:fs";
import { loadavg } from "node:os";
import { parseArgs } from "node:util";
import { createRng } from "../src/core/random/rng.ts";
import { percentile } from "../src/core/replay/stats.ts";
import { parseMooncakeTrace } from "../src/core/workload/mooncake-trace.ts";
import { createLogger } from "../src/lib/logger.ts";
import { createBlockHasher } from "../src/lib/xxh3.ts";
import { machineLine } from "./lib/machine.ts";
import { threadCpuSeconds } from "./lib/thread-cpu.ts";

const { values: args } = parseArgs({ options: { baseline: { type: "string" }, runs: { type: "string", default: "5" } } });
const WORKERS = 1000;
const BLOCK_SIZE = 64;
const PROMPT_BLOCKS = 32;
const DECISIONS = 20_000;
const RUNS = Number(args.runs);
if (!Number.isInteger(RUNS) || RUNS < 1) throw new Error(`--runs: expected a positive integer, got ${args.runs}`);
const TRACE = new URL("../traces/mooncake_conversation_trace.jsonl", import.meta.url).pathname;

const hasher = createBlockHasher();
const logger = createLogger({ level: "silent" });
const trace = parseMooncakeTrace(readFileSync(TRACE, "utf8")).requests;
const prompts: Uint32Array[] = [];
for (const r of trace) {
  if (r.inputLength < PROMPT_BLOCKS * BLOCK_SIZE) continue;
  const tokens = new Uint32Array(r.inputLength);
  r.writeTokens(tokens);
  prompts.push(tokens.slice(0, PROMPT_BLOCKS * BLOCK_SIZE));
}
const hashed = prompts.map((p) => hasher.hashBlocks(p, BLOCK_SIZE).sequence);
const P = prompts.length;

// Only the methods used here, as each build's RoutingState and Router have them.
interface Decision {
  request: unknown;
}
interface BenchRouter {
  route(q: { seqHashes: BigUint64Array; promptTokens: number; blockSize: number }): Decision | "overloaded" | undefined;
  finish(r: unknown): void;
  activeBlocksOf(rankId: number): number;
}
interface BenchState {
  putWorker(r: unknown): unknown;
  rankIdOf(w: string, r: number): number;
  index: { apply(rankId: number, e: unknown): void; size(t: string): number };
  route(model: string, tokens: Uint32Array): object;
  firstToken(p: unknown): void;
  finish(p: unknown): void;
  routerOf(model: string): BenchRouter | undefined;
}
interface Setup {
  name: string;
  state: BenchState;
  router: BenchRouter;
  /** Per query, its fastest decide time over every run so far (ms). */
  fastest: Float64Array;
}

async function setup(name: string, root: string): Promise<Setup> {
  const { RoutingState } = await import(`${root}/src/roles/frontend/routing-state.ts`);
  const state: BenchState = new RoutingState({ router: { mode: "kv" }, blockSize: BLOCK_SIZE, hasher, rng: createRng(1), logger, now: () => performance.now() });
  for (let w = 0; w < WORKERS; w++) {
    state.putWorker({
      worker_id: `w${w}`, worker_index: w, model: "m", worker_type: "mocker", request_url: "http://127.0.0.1:1/v1/generate", data_parallel_size: 1,
      block_size: BLOCK_SIZE, total_gpu_blocks: 16384, total_host_blocks: 0, kv_event_source_mode: "direct", raw_endpoints: [], raw_topic: "", capabilities: ["generate"], topology: {},
    });
  }
  const loadStart = performance.now();
  let stored = 0;
  trace.forEach((r, i) => {
    const tokens = new Uint32Array(r.inputLength);
    r.writeTokens(tokens);
    const seq = hasher.hashBlocks(tokens, BLOCK_SIZE).sequence;
    state.index.apply(state.rankIdOf(`w${i % WORKERS}`, 0), { kind: "stored", tier: "device", blockHashes: [...seq] });
    stored += seq.length;
  });
  const router = state.routerOf("m")!;
  // In-flight load: 8 trace prompts per candidate, routed and left unfinished (first tokens out).
  for (let i = 0; i < WORKERS * 8; i++) {
    const r = trace[i % trace.length]!;
    const tokens = new Uint32Array(r.inputLength);
    r.writeTokens(tokens);
    const p = state.route("m", tokens);
    if ("status" in p) throw new Error(String((p as { message?: string }).message));
    state.firstToken(p);
  }
  let activeBlocks = 0;
  for (let w = 0; w < WORKERS; w++) activeBlocks += router.activeBlocksOf(state.rankIdOf(`w${w}`, 0));
  console.log(
    `${name}: ${trace.length} trace requests, ${stored} device blocks over ${WORKERS} workers (${state.index.size("device")} distinct per worker summed), loaded in ${((performance.now() - loadStart) / 1000).toFixed(1)} s; ` +
      `${WORKERS * 8} prompts in flight, ${activeBlocks} distinct active blocks; ${P} distinct 32-block queries, block size ${BLOCK_SIZE}`,
  );
  return { name, state, router, fastest: new Float64Array(P).fill(Infinity) };
}

interface Run {
  p50: number;
  p99: number;
  cpuUs: number;
  /** CPU µs per decision of the deciding thread alone (NaN where it cannot be read). */
  threadUs: number;
  faults: number;
  switches: number;
  load: number;
}

function run(s: Setup, kind: "decide" | "hash + decide"): Run {
  const times = new Float64Array(DECISIONS);
  let cpu0 = process.cpuUsage();
  let ru0 = process.resourceUsage();
  let thread0 = NaN;
  for (let i = 0; i < DECISIONS + 2000; i++) {
    const k = i % P;
    const t0 = performance.now();
    if (kind === "decide") {
      const d = s.router.route({ seqHashes: hashed[k]!, promptTokens: PROMPT_BLOCKS * BLOCK_SIZE, blockSize: BLOCK_SIZE })!;
      if (d !== "overloaded") s.router.finish(d.request);
    } else {
      const p = s.state.route("m", prompts[k]!);
      if (!("status" in p)) s.state.finish(p);
    }
    const dt = performance.now() - t0;
    if (i >= 2000) {
      times[i - 2000] = dt; // first 2,000: warm-up
      if (kind === "decide" && dt < s.fastest[k]!) s.fastest[k] = dt;
    }
    if (i === 1999) {
      cpu0 = process.cpuUsage();
      ru0 = process.resourceUsage();
      thread0 = threadCpuSeconds?.() ?? NaN;
    }
  }
  const threadUs = (((threadCpuSeconds?.() ?? NaN) - thread0) * 1e6) / DECISIONS;
  const cpu = process.cpuUsage(cpu0);
  const ru = process.resourceUsage();
  return {
    p50: percentile(times, 50), p99: percentile(times, 99), cpuUs: (cpu.user + cpu.system) / DECISIONS, threadUs,
    faults: ((ru.minorPageFault - ru0.minorPageFault) * 1000) / DECISIONS, switches: ((ru.involuntaryContextSwitches - ru0.involuntaryContextSwitches) * 1000) / DECISIONS, load: loadavg()[0]!,
  };
}

const setups = [await setup("this build", new URL("..", import.meta.url).pathname.replace(/\/$/, ""))];
if (args.baseline !== undefined) setups.push(await setup(`baseline ${args.baseline}`, args.baseline.replace(/\/$/, "")));
const us = (ms: number) => (ms * 1000).toFixed(1);
const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const results = new Map<string, Run[]>();
for (const kind of ["decide", "hash + decide"] as const) {
  for (const s of setups) results.set(`${s.name}/${kind}`, []);
  for (let r = 0; r < RUNS; r++) for (const s of r % 2 === 0 ? setups : [...setups].reverse()) results.get(`${s.name}/${kind}`)!.push(run(s, kind));
  for (const s of setups) {
    const runs = results.get(`${s.name}/${kind}`)!;
    const m = (f: (x: Run) => number) => med(runs.map(f));
    console.log(
      `${s.name.padEnd(12)} ${kind.padEnd(14)} p50 ${us(m((x) => x.p50))} µs, p99 ${us(m((x) => x.p99))} µs (p99 / p50 ${(m((x) => x.p99) / m((x) => x.p50)).toFixed(2)}), CPU ${m((x) => x.cpuUs).toFixed(1)} µs per decision (the deciding thread ${m((x) => x.threadUs).toFixed(1)} µs) ` +
        `(median of ${RUNS} runs; p99 per run ${runs.map((x) => us(x.p99)).join(", ")} µs; per 1,000 decisions: page faults ${runs.map((x) => x.faults.toFixed(0)).join(", ")}, involuntary switches ${runs.map((x) => x.switches.toFixed(1)).join(", ")}; load ${runs.map((x) => x.load.toFixed(1)).join(", ")})`,
    );
    if (kind === "decide") {
      const f = s.fastest.filter((x) => x !== Infinity);
      console.log(`${s.name.padEnd(12)} decide, each query's fastest of ~${Math.round((RUNS * DECISIONS) / P)}: p50 ${us(percentile(f, 50))} µs, p99 ${us(percentile(f, 99))} µs (p99 / p50 ${(percentile(f, 99) / percentile(f, 50)).toFixed(2)}): the work's own tail`);
    }
  }
  if (setups.length === 2) {
    const [A, B] = setups.map((s) => results.get(`${s.name}/${kind}`)!);
    const ratio = (f: (x: Run) => number) => med(A!.map((x, i) => f(x) / f(B![i]!))).toFixed(2);
    console.log(`this / baseline, ${kind}, median of paired runs: p50 ${ratio((x) => x.p50)}×, p99 ${ratio((x) => x.p99)}×, CPU ${ratio((x) => x.cpuUs)}×`);
  }
}
console.log(machineLine());
