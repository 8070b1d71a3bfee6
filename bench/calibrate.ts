// calibrate's speed and error on a 2,000-request run. The run is the head of the Mooncake
// conversation trace (real arrivals and prefix reuse) served by 4 kv-routed workers whose steps a
// hidden profile times (Qwen3-8B on H200 with decode × 1.3 and prefill × 0.8), each request's
// TTFT and gaps then given 2 % of seeded measurement noise, saved as kvcr-mock bench
// --save-detailed writes it (with cached_lens and each request's worker). Each round runs `kvcr-mock
// calibrate` on it in a fresh process pinned to one core (taskset -c 0) and takes its wall time;
// prints the median of `rounds`, the replays and held-out errors, and the fitted profile's mean
// TTFT and ITL against the hidden one's on the next 2,000 requests of the trace.
// Run: bun bench/calibrate.ts [rounds=3]
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadTimingProfile } from "../src/config/timing-profile.ts";
import { simulatedTimes } from "../src/core/calibrate/fit.ts";
import { createRng } from "../src/core/random/rng.ts";
import { simulate } from "../src/core/replay/simulator.ts";
import type { WorkloadRequest } from "../src/core/workload/workload.ts";
import { createLogger } from "../src/lib/logger.ts";
import { createBlockHasher } from "../src/lib/xxh3.ts";
import type { TablesProfile } from "../src/protocol/timing-profile.ts";
import { loadWorkload } from "../src/roles/shared/measure/workload.ts";
import { CLI, roundsArg, TRACE } from "./lib/dynamo-sides.ts";
import { machineLine } from "./lib/machine.ts";
import { median } from "./lib/router-scenarios.ts";

const rounds = roundsArg(1);
const N = 2000;
const WORKERS = 4;
const hasher = createBlockHasher();
const engine = { blockSize: 64, timingModel: "profile" as const };

const base = loadTimingProfile("builtin:qwen3-8b-h200-vllm0.24-tp1") as TablesProfile;
const scaled = (ms: number[][], f: number) => ms.map((row) => row.map((v) => v * f));
const hidden: TablesProfile = { ...base, name: "hidden", prefill: { ...base.prefill, ms: scaled(base.prefill.ms, 0.8) }, decode: { ...base.decode, ms: scaled(base.decode.ms, 1.3) } as TablesProfile["decode"] };

const trace = loadWorkload({ trace: TRACE, traceBlockSize: 512, skipBadLines: false, synthetic: { numPrefixes: 1, prefixTokens: 1, suffixTokens: 1, outputTokens: 1 }, requests: 2 * N, seed: 0 }, { readFile: (p) => readFileSync(p, "utf8"), logger: createLogger({ level: "warn" }) });
const head = trace.slice(0, N);
const next = trace.slice(N);

const replay = (workload: readonly WorkloadRequest[], profile: unknown) =>
  simulate(workload, { engine: { ...engine, timingProfile: profile as TablesProfile, timingExtrapolate: true }, numWorkers: WORKERS, routerMode: "kv", arrival: { kind: "trace", speedupRatio: 1 }, seed: 0, regret: false }, { hasher });

// The measured run: the hidden profile's replay, with noise a client would see.
const served = replay(head, hidden);
const rng = createRng(7);
const noisy = (ms: number) => ms * (1 + 0.02 * (rng.next() * 2 - 1));
const t0 = head[0]!.timestampMs;
const run = {
  backend: "kvcr-mock",
  model_id: "Qwen/Qwen3-8B",
  input_lens: head.map((r) => r.inputLength),
  output_lens: head.map((r) => r.outputLength),
  ttfts: head.map((_, i) => noisy(simulatedTimes(served, i).ttftMs) / 1000),
  itls: head.map((r, i) => Array.from({ length: r.outputLength - 1 }, () => noisy(simulatedTimes(served, i).itlMs) / 1000)),
  start_times: head.map((r) => (r.timestampMs - t0) / 1000),
  cached_lens: Array.from(served.cachedTokens),
  errors: head.map((_, i) => (served.errors.has(i) ? "failed" : "")),
  workers: head.map((_, i) => `worker-${served.worker[i]}`),
};

const dir = mkdtempSync(join(tmpdir(), "kvcr-bench-calibrate-"));
try {
  const from = join(dir, "run.json");
  writeFileSync(from, JSON.stringify(run));
  const out = join(dir, "fitted.json");
  const report = join(dir, "report.json");
  console.log(machineLine());
  const walls: number[] = [];
  for (let r = 0; r < rounds; r++) {
    const started = performance.now();
    const p = Bun.spawnSync(["taskset", "-c", "0", process.execPath, CLI, "calibrate", "--from", from, "--out", out, "--block-size", String(engine.blockSize), "--output-json", report, "--log-level", "warn"], { stdout: "pipe", stderr: "pipe" });
    walls.push((performance.now() - started) / 1000);
    if (p.exitCode !== 0) throw new Error(`calibrate exited ${p.exitCode}: ${p.stderr.toString().slice(-2000)}`);
  }
  const fit = JSON.parse(readFileSync(report, "utf8")) as { replays: number; trained: number; held_out: number; held_out_accuracy: Record<string, { mapePct: number; mpePct: number; pearsonR: number | null; mean: { errorPct: number } }> };
  console.log(`\ncalibrate on ${N} requests (served by ${WORKERS} kv-routed workers; ${fit.trained} fitted, ${fit.held_out} held out), one core: median ${median(walls).toFixed(2)} s of ${rounds} (${walls.map((w) => w.toFixed(2)).join(", ")}), ${fit.replays} replays`);
  for (const [m, a] of Object.entries(fit.held_out_accuracy)) console.log(`  held-out ${m.toUpperCase()}: MAPE ${a.mapePct.toFixed(1)} %, MPE ${a.mpePct.toFixed(1)} %, error of mean ${a.mean.errorPct.toFixed(1)} %, r ${a.pearsonR === null ? "-" : a.pearsonR.toFixed(3)}`);
  const fitted = JSON.parse(readFileSync(out, "utf8"));
  const [truth, mine] = [replay(next, hidden), replay(next, fitted)];
  const mean = (sim: ReturnType<typeof replay>, k: "ttftMs" | "itlMs") => {
    let s = 0;
    let n = 0;
    for (let i = 0; i < next.length; i++) {
      const v = simulatedTimes(sim, i)[k];
      if (Number.isFinite(v)) (s += v), n++;
    }
    return s / n;
  };
  console.log(`the next ${next.length} requests, fitted against hidden: mean TTFT ${(mean(mine, "ttftMs") / mean(truth, "ttftMs")).toFixed(3)}×, mean ITL ${(mean(mine, "itlMs") / mean(truth, "itlMs")).toFixed(3)}×`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
