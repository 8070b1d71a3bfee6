// Dynamo's mocker with AISimulate timing against kvcr-mock with the built-in profile for the same
// model, GPU and vLLM version (Qwen3-8B, H200, vLLM 0.24, TP1), on the same workloads, both on their
// offline replay (Dynamo: `dynamo.replay.run_trace_replay` with the engine's AIS timing model; the
// same engine settings on both: 64-token blocks, 16,384 G1 blocks, 256 sequences, 8,192 batched
// tokens, kv routing). kvcr-mock's replay is deterministic (one run); Dynamo's varies a little from
// run to run on the trace, so its figure is the median of `rounds` runs, their range printed.
// Workloads: one request (1,024 prompt tokens, 100 output); 16 such at once on one worker; the first
// 300 requests of the Mooncake conversation trace on 4 workers.
// Needs a Python where Dynamo 1.6.1 and AISimulate import (KVCR_AIS_PYTHON; docs/timing.md says how
// to make one). Run: KVCR_AIS_PYTHON=… bun bench/fidelity-timing.ts [rounds=3]
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CLI, roundsArg, TRACE } from "./lib/dynamo-sides.ts";
import { machineLine } from "./lib/machine.ts";
import { median } from "./lib/router-scenarios.ts";

const rounds = roundsArg(1);
const python = process.env.KVCR_AIS_PYTHON;
if (!python) throw new Error("KVCR_AIS_PYTHON: give a Python where `import dynamo.replay, aisimulate_core` works (docs/timing.md)");
const PROFILE = "builtin:qwen3-8b-h200-vllm0.24-tp1";
const ENGINE = { block_size: 64, num_gpu_blocks: 16384, max_num_seqs: 256, max_num_batched_tokens: 8192, enable_prefix_caching: true, enable_chunked_prefill: true };
const AIS = { model: "Qwen/Qwen3-8B", backend: "vllm", system: "h200_sxm", backend_version: "0.24.0", tp: 1, worker_type: "aggregated" };

const DYNAMO_REPLAY = `
import json, sys
from dynamo.replay import run_trace_replay
r = run_trace_replay(sys.argv[1], extra_engine_args=sys.argv[2], num_workers=int(sys.argv[3]), router_mode="kv_router", trace_block_size=512)
s = r.summary
print(json.dumps({"completed": s["completed_requests"], "mean_ttft_ms": s["mean_ttft_ms"], "mean_itl_ms": s["mean_itl_ms"], "mean_e2el_ms": s["mean_e2e_latency_ms"]}))
`;
const METRICS = ["mean_ttft_ms", "mean_itl_ms", "mean_e2el_ms"] as const;
type Figures = Record<(typeof METRICS)[number] | "completed", number>;

function run(argv: string[], what: string): string {
  const r = Bun.spawnSync(argv, { env: { ...process.env, DYN_LOG: "error" }, stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`${what} exited ${r.exitCode}: ${argv.join(" ")}\n${r.stderr.toString().slice(-3000)}`);
  return r.stdout.toString();
}

function dynamo(trace: string, workers: number): Figures {
  const out = run([python!, "-c", DYNAMO_REPLAY, trace, JSON.stringify({ engine: { ...ENGINE, timing_model: { type: "external", provider: "ais", config: AIS } } }), String(workers)], "Dynamo's replay (AIS timing)");
  return JSON.parse(out.trim().split("\n").pop()!) as Figures;
}

function ours(trace: string, workers: number, dir: string): Figures {
  const json = join(dir, "ours.json");
  run([process.execPath, CLI, "replay", "--trace", trace, "--timing-profile", PROFILE, "--num-workers", String(workers), "--router-mode", "kv", "--block-size", "64", "--num-gpu-blocks-override", "16384",
    "--max-num-seqs", "256", "--max-num-batched-tokens", "8192", "--trace-block-size", "512", "--output-json", json, "--log-level", "warn"], "kvcr-mock replay");
  const r = JSON.parse(readFileSync(json, "utf8")) as Record<string, number>;
  return { completed: r.completed!, mean_ttft_ms: r.mean_ttft_ms!, mean_itl_ms: r.mean_itl_ms!, mean_e2el_ms: r.mean_e2el_ms! };
}

const dir = mkdtempSync(join(tmpdir(), "kvcr-bench-fidelity-timing-"));
try {
  const request = (i: number) => JSON.stringify({ timestamp: 0, input_length: 1024, output_length: 101, hash_ids: [1000 + 2 * i, 1001 + 2 * i] });
  const one = join(dir, "one.jsonl");
  writeFileSync(one, `${request(0)}\n`);
  const sixteen = join(dir, "sixteen.jsonl");
  writeFileSync(sixteen, `${Array.from({ length: 16 }, (_, i) => request(i)).join("\n")}\n`);
  const trace300 = join(dir, "trace300.jsonl");
  writeFileSync(trace300, `${readFileSync(TRACE, "utf8").split("\n").slice(0, 300).join("\n")}\n`);
  const versions = run([python, "-c", "import importlib.metadata as m; print(m.version('ai-dynamo'), m.version('aisimulate'))"], "the AIS Python's versions").trim().split(" ");
  console.log(machineLine());
  console.log(`Dynamo ${versions[0]}'s mocker, AIS timing from aisimulate ${versions[1]} (Qwen3-8B, h200_sxm, vLLM 0.24.0, TP1) against kvcr-mock ${PROFILE}; kvcr-mock / Dynamo:`);
  for (const [name, trace, workers] of [["1 request", one, 1], ["16 at once, 1 worker", sixteen, 1], ["trace, first 300, 4 workers", trace300, 4]] as const) {
    const runs = Array.from({ length: rounds }, () => dynamo(trace, workers));
    const o = ours(trace, workers, dir);
    const cells = METRICS.map((m) => {
      const d = runs.map((r) => r[m]);
      const range = rounds > 1 ? ` [${Math.min(...d).toFixed(2)}–${Math.max(...d).toFixed(2)}]` : "";
      return `${m.replace("mean_", "").replace("_ms", "")} ${o[m].toFixed(2)} / ${median(d).toFixed(2)}${range} ms (${(o[m] / median(d)).toFixed(3)}×)`;
    });
    console.log(`  ${name.padEnd(28)} ${cells.join("   ")}   completed ${o.completed} / ${runs[0]!.completed}`);
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
