// Replay against Dynamo's: the whole Mooncake conversation trace (12,031 requests, on its own
// timestamps) through Dynamo 1.6.1's offline replay (`dynamo.replay.run_trace_replay`, its mocker
// engine and KV router, in-process) and through `kvcr-mock replay`, the same engine arguments on
// both (4 workers, blocks of 64 tokens, 16,384 G1 blocks, 256 sequences, 8,192 batched tokens,
// prefix caching and chunked prefill, each router at its defaults). Prints the simulated mean and
// p90 TTFT, ITL and E2E and prefix reuse (Σ cached prompt tokens / Σ prompt tokens, from each
// side's own counts) with kvcr-mock's difference, then each simulator's wall and CPU time of the
// simulation alone (Dynamo: its own wall_time_ms and the process CPU around the call, not Python's
// start-up; kvcr-mock: the report's wall time and the process CPU less a run on a one-line trace),
// the median of `rounds` fresh processes, sides alternated.
// Needs the peers environment. Run: bun bench/fidelity-replay.ts [rounds=3]
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CLI, pinnedPeersPython, roundsArg, TRACE } from "./lib/dynamo-sides.ts";
import { machineLine } from "./lib/machine.ts";
import { median } from "./lib/router-scenarios.ts";

const rounds = roundsArg(1);
const python = pinnedPeersPython();
const dir = mkdtempSync(join(tmpdir(), "kvcr-bench-fidelity-replay-"));
const WORKERS = 4;
const ENGINE = { block_size: 64, num_gpu_blocks: 16384, max_num_seqs: 256, max_num_batched_tokens: 8192, enable_prefix_caching: true, enable_chunked_prefill: true };
const OUR_FLAGS = ["--num-workers", String(WORKERS), "--router-mode", "kv", "--block-size", "64", "--num-gpu-blocks-override", "16384", "--max-num-seqs", "256", "--max-num-batched-tokens", "8192", "--trace-block-size", "512"];

const DYNAMO_REPLAY = `
import json, sys, time
from dynamo.replay import run_trace_replay
trace, engine, workers = sys.argv[1], sys.argv[2], int(sys.argv[3])
c0 = time.process_time()
r = run_trace_replay(trace, extra_engine_args=engine, num_workers=workers, router_mode="kv_router", trace_block_size=512, capture_per_request=True)
cpu = time.process_time() - c0
s = r.summary
reused = sum(q["reused_input_tokens"] or 0 for q in r.per_request)
print(json.dumps({"wall_s": s["wall_time_ms"] / 1000, "cpu_s": cpu, "completed": s["completed_requests"], "mean_ttft_ms": s["mean_ttft_ms"], "p90_ttft_ms": s["p90_ttft_ms"],
  "mean_itl_ms": s["mean_itl_ms"], "p90_itl_ms": s["p90_itl_ms"], "mean_e2el_ms": s["mean_e2e_latency_ms"], "p90_e2el_ms": s["p90_e2e_latency_ms"],
  "reuse": reused / s["total_input_tokens"], "dynamo_prefix_cache_reused_ratio": s["prefix_cache_reused_ratio"]}))
`;

type Result = { wall_s: number; cpu_s: number; completed: number; reuse: number } & Record<(typeof METRICS)[number], number>;
const METRICS = ["mean_ttft_ms", "p90_ttft_ms", "mean_itl_ms", "p90_itl_ms", "mean_e2el_ms", "p90_e2el_ms"] as const;

function run(argv: string[], what: string): { stdout: string; cpuS: number } {
  const r = Bun.spawnSync(argv, { env: { ...process.env, DYN_LOG: "error", TMPDIR: dir }, stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`${what} exited ${r.exitCode}: ${argv.join(" ")}\n${r.stderr.toString().slice(-3000)}`);
  return { stdout: r.stdout.toString(), cpuS: Number(r.resourceUsage.cpuTime.user + r.resourceUsage.cpuTime.system) / 1e6 };
}

function dynamo(): Result {
  const { stdout } = run([python, "-c", DYNAMO_REPLAY, TRACE, JSON.stringify({ engine: ENGINE }), String(WORKERS)], "Dynamo's replay");
  return JSON.parse(stdout.trim().split("\n").pop()!) as Result;
}

function ours(trace: string): Result {
  const out = join(dir, "ours.json");
  const { cpuS } = run([process.execPath, CLI, "replay", "--trace", trace, ...OUR_FLAGS, "--output-json", out, "--log-level", "warn"], "kvcr-mock replay");
  const r = JSON.parse(readFileSync(out, "utf8")) as Record<string, number>;
  return { ...(Object.fromEntries(METRICS.map((m) => [m, r[m]!])) as Record<(typeof METRICS)[number], number>), wall_s: r.wall_time_s!, cpu_s: cpuS, completed: r.completed!, reuse: r.cached_tokens! / r.total_input_tokens! };
}

try {
  // kvcr-mock's process start-up (the binary, the trace read and parsed aside): a one-request trace.
  const one = join(dir, "one.jsonl");
  writeFileSync(one, readFileSync(TRACE, "utf8").split("\n")[0] + "\n");
  const dyn: Result[] = [], mine: Result[] = [], startup: number[] = [];
  for (let round = 1; round <= rounds; round++) {
    for (const side of round % 2 === 1 ? ["dynamo", "kvcr-mock"] : ["kvcr-mock", "dynamo"]) {
      if (side === "dynamo") dyn.push(dynamo());
      else {
        startup.push(ours(one).cpu_s);
        mine.push(ours(TRACE));
      }
    }
  }
  const [d, k] = [dyn[0]!, mine[0]!];
  console.log(`whole conversation trace (${d.completed} / ${k.completed} requests completed), ${WORKERS} workers, ${JSON.stringify(ENGINE)}, each router at its defaults\n`);
  console.log("| figure | Dynamo 1.6.1 replay | kvcr-mock replay | kvcr-mock / Dynamo |\n|---|---|---|---|");
  for (const m of [...METRICS, "reuse"] as const) console.log(`| ${m} | ${d[m].toFixed(m === "reuse" ? 4 : 2)} | ${k[m].toFixed(m === "reuse" ? 4 : 2)} | ${(k[m] / d[m]).toFixed(3)} |`);
  const [dw, kw, dc, kc] = [median(dyn.map((r) => r.wall_s)), median(mine.map((r) => r.wall_s)), median(dyn.map((r) => r.cpu_s)), median(mine.map((r, i) => r.cpu_s - startup[i]!))];
  console.log(`| simulation wall (s), median of ${rounds} | ${dw.toFixed(2)} (${dyn.map((r) => r.wall_s.toFixed(2)).join(", ")}) | ${kw.toFixed(2)} (${mine.map((r) => r.wall_s.toFixed(2)).join(", ")}) | speed ${(dw / kw).toFixed(2)}× (target ≥ 5×) |`);
  console.log(`| simulation CPU (s), median of ${rounds} | ${dc.toFixed(2)} | ${kc.toFixed(2)} | speed ${(dc / kc).toFixed(2)}× |`);
  console.log(machineLine("one simulator runs at a time"));
} finally {
  rmSync(dir, { recursive: true, force: true });
}
