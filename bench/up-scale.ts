// `kvcr-mock up` at scale: time from starting `up` to its "stack ready" line, and RSS
// per process once ready, for 1 agent + 4 mocker processes × 256 workers (1,024 CacheOwners)
// + frontend, and the same at 4 × 1,024 workers. Each shape runs BENCH_RUNS times (default 3) and
// the median is printed, with the slowest readiness gate of each run from up's own log. Run:
// `npx bun bench/up-scale.ts` (env BENCH_RUNS, BENCH_SHAPES="4x256,4x1024", BENCH_READY_TIMEOUT seconds per gate (600), BENCH_BIN = a compiled
// binary to measure instead of `bun src/cli.ts`).
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { LineQueue } from "../test/lines.ts";
import { envNumber } from "./lib/measure.ts";
import { figure } from "./lib/figures.ts";

const RUNS = envNumber("BENCH_RUNS", 3);
const SHAPES = (process.env.BENCH_SHAPES ?? "4x256,4x1024").split(",").map((s) => s.split("x").map(Number) as [number, number]);
const READY_TIMEOUT_S = envNumber("BENCH_READY_TIMEOUT", 600);
const CLI = process.env.BENCH_BIN ? [process.env.BENCH_BIN] : [process.execPath, resolve(import.meta.dir, "../src/cli.ts")];

interface Run {
  readyS: number;
  /** MiB per process name. */
  rssMiB: Record<string, number>;
  stages: Record<string, number>;
}

function rssMiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]) / 1024;
}

async function once(processes: number, workers: number): Promise<Run> {
  const dir = mkdtempSync(join(tmpdir(), "kvcr-up-scale-"));
  const state = join(dir, "state.json");
  const t0 = performance.now();
  const up = Bun.spawn(
    [...CLI, "up", "--mocker-processes", String(processes), "--workers-per-process", String(workers), "--http-port", "0", "--agent-port", "0",
      "--discovery-dir", join(dir, "discovery"), "--state-file", state, "--ready-timeout", String(READY_TIMEOUT_S), "--log-format", "json"],
    { stdout: "pipe", stderr: "pipe", env: { ...process.env, NO_COLOR: "1" } },
  );
  const stages: Record<string, number> = {};
  const err = new LineQueue(up.stderr);
  void (async () => {
    // up's own lines: "<stage> ready" with the time since start.
    for (;;) {
      const line = await err.next((l) => l.startsWith("{") && l.includes(" ready\""), 600_000).catch(() => undefined);
      if (!line) return;
      const msg = (JSON.parse(line) as { msg: string }).msg;
      stages[msg.replace(/ ready$/, "")] = (performance.now() - t0) / 1000;
    }
  })();
  try {
    // Under --log-format json the ready summary is one JSON line whose msg says it.
    await new LineQueue(up.stdout).next((l) => l.startsWith("kvcr-mock stack ready") || (l.startsWith("{") && l.includes('"msg":"kvcr-mock stack ready')), 600_000, () => `stack ready; up said:\n${err.lines.filter((l) => l.includes('"tag":"up"') || l.startsWith("kvcr-mock:") || l.startsWith("    ") === false && !l.includes(" | ")).slice(-6).join("\n")}`);
    const readyS = (performance.now() - t0) / 1000;
    const s = JSON.parse(readFileSync(state, "utf8")) as { processes: { name: string; pid: number }[] };
    const rss: Record<string, number> = { up: rssMiB(up.pid) };
    for (const p of s.processes) rss[p.name] = rssMiB(p.pid);
    return { readyS, rssMiB: rss, stages };
  } finally {
    up.kill("SIGTERM");
    await up.exited;
    rmSync(dir, { recursive: true, force: true });
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

console.log(`kvcr-mock up at scale: ${CLI.length === 1 ? "compiled binary" : "bun src/cli.ts"}, ${cpus().length} cores, load ${loadavg()[0]!.toFixed(2)}, median of ${RUNS} runs`);
for (const [processes, workers] of SHAPES) {
  const runs: Run[] = [];
  for (let i = 0; i < RUNS; i++) {
    runs.push(await once(processes, workers));
    console.log(`  ${processes} × ${workers}: run ${i + 1} ready in ${runs.at(-1)!.readyS.toFixed(2)} s (stages ${Object.entries(runs.at(-1)!.stages).map(([k, v]) => `${k} ${v.toFixed(2)}`).join(", ")})`);
  }
  const names = Object.keys(runs[0]!.rssMiB);
  console.log(`1 agent + ${processes} × ${workers} workers (${processes * workers} slots) + frontend: ready in ${median(runs.map((r) => r.readyS)).toFixed(2)} s`);
  console.log(`  RSS MiB: ${names.map((n) => `${n} ${median(runs.map((r) => r.rssMiB[n]!)).toFixed(0)}`).join(", ")}`);
  const perWorker = median(runs.map((r) => r.rssMiB["mocker-0"]!)) / workers;
  figure(`up ${processes}x${workers} ready`, median(runs.map((r) => r.readyS)), "s", "lower");
  figure(`up ${processes}x${workers} mocker-0 RSS`, median(runs.map((r) => r.rssMiB["mocker-0"]!)), "MiB", "lower");
  console.log(`  per mocker worker: ${(perWorker * 1024).toFixed(0)} KiB; load now ${loadavg()[0]!.toFixed(2)}`);
}
