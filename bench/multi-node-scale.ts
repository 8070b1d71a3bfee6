// The reference deployment's shape through etcd vs the file backend on one node, in one run:
// etcd: 3 nodes (127.0.0.2/3/4) × PROCESSES mocker processes × WORKERS workers, node A also the
// agent and frontend; file: the same workers from one `up` on one node. Each: time from launch to
// every slot attached on the agent, etcd puts/s during registration (revision delta / time), then a
// shared-prefix load through the frontend for LOAD_S seconds, and the agent's raw cursor counters
// (gaps, recovered from replay, dropped = unrecovered). Run:
//   npx bun bench/multi-node-scale.ts            # the reference shape: 3 × 4 × 171 = 2,052 workers, 60 s
//   BENCH_PROCESSES=2 BENCH_WORKERS=32 BENCH_LOAD_S=20 BENCH_RUNS=3 npx bun bench/multi-node-scale.ts
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { cpus, loadavg } from "node:os";
import { startEtcd, type EtcdServer } from "../test/etcd.ts";
import { CLI_ENTRY, spawnProcess, tempDir, waitFor, runCli, type ChildProcess } from "../test/harness.ts";
import { envNumber } from "./lib/measure.ts";

const PROCESSES = envNumber("BENCH_PROCESSES", 4);
const WORKERS = envNumber("BENCH_WORKERS", 171);
const LOAD_S = envNumber("BENCH_LOAD_S", 60);
const RUNS = envNumber("BENCH_RUNS", 1);
const TOTAL = 3 * PROCESSES * WORKERS;
const cli = [process.execPath, CLI_ENTRY];

interface Figures {
  attachS: number;
  putsPerS: number;
  completed: number;
  failed: number;
  reqPerS: number;
  gaps: number;
  recovered: number;
  dropped: number;
}

const engine = ["--block-size", "16", "--num-gpu-blocks-override", "512", "--num-host-blocks", "512", "--speedup-ratio", "10", "--log-level", "warn", "--stagger-delay", "0"];

async function revision(etcd: EtcdServer): Promise<number> {
  const r = (await (await fetch(`${etcd.endpoint}/v3/kv/range`, { method: "POST", body: JSON.stringify({ key: "AA==" }) })).json()) as { header: { revision: string } };
  return Number(r.header.revision);
}

async function run(backend: "etcd" | "file", etcd: EtcdServer, dir: string, ns: string): Promise<Figures> {
  const ups: ChildProcess[] = [];
  try {
    const discovery = backend === "etcd" ? ["--discovery-backend", "etcd", "--etcd-endpoints", etcd.endpoint] : ["--discovery-dir", join(dir, `disc-${ns}`)];
    const common = ["--namespace", ns, "--workers-per-process", String(WORKERS), ...discovery, ...engine];
    const rev0 = backend === "etcd" ? await revision(etcd) : 0;
    const t0 = performance.now();
    const nodes = backend === "etcd" ? [["127.0.0.2", 0], ["127.0.0.3", PROCESSES * WORKERS], ["127.0.0.4", 2 * PROCESSES * WORKERS]] as const : [["127.0.0.1", 0]] as const;
    nodes.forEach(([host, base], i) => {
      const roles = i === 0 ? ["--roles", "agent,frontend,mockers", "--max-slots", String(TOTAL), "--http-port", "0", "--agent-port", "0", "--ready-timeout", "600"] : ["--roles", "mockers"];
      const procs = backend === "etcd" ? PROCESSES : 3 * PROCESSES;
      ups.push(spawnProcess([...cli, "up", ...roles, "--host", host, "--kv-state-agent-raw-host", host, "--cache-slot-base", String(base), "--mocker-processes", String(procs), "--state-file", join(dir, `${ns}-${i}.json`), ...common]));
    });
    await ups[0]!.readLine((l) => l.startsWith("kvcr-mock stack ready"), 600_000);
    const state = JSON.parse(readFileSync(join(dir, `${ns}-0.json`), "utf8")) as { agent_url: string; frontend_url: string };
    await waitFor(async () => ((await (await fetch(`${state.agent_url}/v1/slots`)).json()) as { state: string }[]).filter((s) => s.state === "active").length === TOTAL, { what: `${TOTAL} active slots`, timeoutMs: 600_000, intervalMs: 250 });
    const attachS = (performance.now() - t0) / 1000;
    const putsPerS = backend === "etcd" ? (await revision(etcd) - rev0) / attachS : NaN;
    await waitFor(async () => ((await (await fetch(`${state.frontend_url}/health`)).json()) as { instances: number }).instances === TOTAL, { what: "the frontend routing over every worker", timeoutMs: 120_000, intervalMs: 250 });

    const load = await runCli(
      ["bench", "--url", state.frontend_url, "--model", "mock-model", "--num-prefixes", "16", "--prefix-tokens", "512", "--suffix-tokens", "64", "--output-tokens", "16",
        "--concurrency", "64", "--duration", String(LOAD_S), "--requests", "1000000", "--output-json", "-", "--log-level", "error"],
      { timeoutMs: (LOAD_S + 120) * 1000 },
    );
    const report = JSON.parse(load.stdout.slice(load.stdout.indexOf("{"))) as { completed: number; failed: number; request_throughput: number };
    const health = (await (await fetch(`${state.agent_url}/health`)).json()) as { raw_gaps_total: number; raw_batches_recovered_total: number; raw_dropped_batches_total: number };
    return { attachS, putsPerS, completed: report.completed, failed: report.failed, reqPerS: report.request_throughput, gaps: health.raw_gaps_total, recovered: health.raw_batches_recovered_total, dropped: health.raw_dropped_batches_total };
  } finally {
    for (const up of ups) up.proc.kill("SIGTERM");
    for (const up of ups) await Promise.race([up.proc.exited, Bun.sleep(30_000)]);
    for (const up of ups) await up[Symbol.asyncDispose]();
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;
using dir = tempDir("kvcr-mn-scale-");
await using etcd = await startEtcd({ fast: false });
console.log(`${TOTAL} workers (3 × ${PROCESSES} processes × ${WORKERS}), shared-prefix load ${LOAD_S} s at concurrency 64, ${RUNS} run(s); etcd data in ${etcd.dataDir}; load average at start ${loadavg()[0]!.toFixed(1)} on a ${cpus().length}-CPU machine`);
for (const backend of ["etcd", "file"] as const) {
  const runs: Figures[] = [];
  for (let r = 0; r < RUNS; r++) runs.push(await run(backend, etcd, dir.path, `scale-${backend}-${r}`));
  const m = (f: (x: Figures) => number) => median(runs.map(f));
  console.log(
    `${backend === "etcd" ? "etcd, 3 nodes" : "file, 1 node "}: all ${TOTAL} slots attached ${m((x) => x.attachS).toFixed(1)} s after launch` +
      (backend === "etcd" ? ` (etcd ${m((x) => x.putsPerS).toFixed(0)} puts/s meanwhile)` : "") +
      `; load: ${m((x) => x.completed)} completed, ${m((x) => x.failed)} failed, ${m((x) => x.reqPerS).toFixed(1)} req/s; ` +
      `raw cursor gaps ${Math.max(...runs.map((x) => x.gaps))}, recovered ${Math.max(...runs.map((x) => x.recovered))}, unrecovered (dropped) ${Math.max(...runs.map((x) => x.dropped))}`,
  );
}
