// One state agent carrying 4,096 (worker, rank) slots: BENCH_PROCS mocker
// processes × BENCH_WORKERS workers (dp 1) in state-agent mode with replay, one agent child with
// --max-slots = all of them, discovery through one shared file dir; a shared-prefix /v1/generate
// load (one client process per mocker) for BENCH_LOAD_MS. Prints attach time, the agent's CPU, the
// raw batches still queued when the load stops (published by the mockers − applied by the agent),
// raw cursor gaps and unrecovered batches, and p50/p99 ingest lag (agent histogram bucket bounds).
// Run: `npx bun bench/agent-scale.ts` (~2 min; BENCH_PROCS 4, BENCH_WORKERS 1024, BENCH_LOAD_MS
// 60000, BENCH_CONCURRENCY 32 per mocker).
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { dirname, join } from "node:path";
import { cpus, loadavg } from "node:os";
import { defaultDiscoveryDir, openFileDiscoveryStore } from "../src/discovery/file-store.ts";
import { keys } from "../src/discovery/keys.ts";
import type { AgentHostRecord, WorkerRecord } from "../src/protocol/records.ts";
import { runStreamClients } from "./lib/clients.ts";
import { envNumber } from "./lib/measure.ts";

const PROCS = envNumber("BENCH_PROCS", 4);
const WORKERS = envNumber("BENCH_WORKERS", 1024);
const LOAD_MS = envNumber("BENCH_LOAD_MS", 60_000);
const CONCURRENCY = envNumber("BENCH_CONCURRENCY", 32);
const SLOTS = PROCS * WORKERS;
const SLOT_STATES_SEEN = ["active", "detached", "failed", "quarantined"] as const;
const NS = "agentscale";
const CLI = new URL("../src/cli.ts", import.meta.url).pathname;
const quiet = { warn: (m: string) => console.error(m), debug: () => {} };

const dir = await mkdtemp(join(dirname(defaultDiscoveryDir()), "kvcr-bench-agent-"));
const store = await openFileDiscoveryStore({ dir, logger: quiet, useFsWatch: false });
// Leases of 30 s: with 7 engineers sharing 2 cores, a mocker's event loop can stall past the default
// 10 s, its intents lapse, and the agent (correctly) detaches and later re-attaches those slots.
const common = ["--namespace", NS, "--discovery-dir", dir, "--discovery-lease-ttl", String(envNumber("BENCH_LEASE_TTL", 30))];
const procs: Bun.Subprocess[] = [];
const spawn = (args: string[]) => {
  const p = Bun.spawn([process.execPath, CLI, ...args, ...common], { stdin: "ignore", stdout: "inherit", stderr: "inherit" });
  procs.push(p);
  return p;
};

async function until<T>(what: string, timeoutMs: number, check: () => Promise<T | undefined | false>): Promise<T> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const v = await check().catch(() => undefined);
    if (v) return v;
    if (performance.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await Bun.sleep(100);
  }
}

async function cpuSeconds(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, "utf8");
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(f[11]) + Number(f[12])) / 100;
}

async function metrics(url: string): Promise<Map<string, number>> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const out = new Map<string, number>();
  for (const line of text.split("\n")) {
    if (line.startsWith("#") || !line) continue;
    const key = line.slice(0, line.lastIndexOf(" "));
    const name = key.replace(/\{.*$/, "");
    const value = Number(line.slice(line.lastIndexOf(" ") + 1));
    out.set(key, value);
    if (key !== name) out.set(name, (out.get(name) ?? 0) + value);
  }
  return out;
}

/** Upper bucket bound holding quantile q of the agent's ingest lag histogram. */
function lagQuantile(m: Map<string, number>, q: number): string {
  const count = m.get("kvcr_agent_ingest_lag_seconds_count") ?? 0;
  if (count === 0) return "n/a";
  const buckets = [...m].filter(([k]) => k.startsWith("kvcr_agent_ingest_lag_seconds_bucket{")).map(([k, v]) => [k.match(/le="([^"]+)"/)![1]!, v] as const);
  for (const [le, v] of buckets) if (v >= q * count) return le === "+Inf" ? "> 10 s" : `≤ ${Number(le) * 1000} ms`;
  return "n/a";
}

try {
  console.log(`agent scale: ${PROCS} mocker processes × ${WORKERS} workers (dp 1, state-agent mode, replay on) = ${SLOTS} slots, one agent; Bun ${Bun.version}, ${cpus().length} CPUs, load average ${loadavg()[0]!.toFixed(2)}`);
  const agent = spawn(["agent", "--port", "0", "--max-slots", String(SLOTS), "--replay-timeout-ms", "20000", "--log-level", "error"]);
  const host = await until("the agent host record", 30_000, async () => (await store.list(keys.kindPrefix(NS, "agent")))[0]?.value as AgentHostRecord | undefined);
  const t0 = performance.now();
  const urls: string[] = [];
  for (let p = 0; p < PROCS; p++) {
    spawn([
      "mocker", "--log-level", "warn", "--num-workers", String(WORKERS), "--speedup-ratio", "10", "--num-gpu-blocks-override", "256", "--num-host-blocks", "256", "--block-size", "16",
      "--zmq-kv-events-ports", Array(WORKERS).fill("0").join(","), "--zmq-replay-ports", Array(WORKERS).fill("0").join(","), "--http-port", "0",
      "--kv-state-agent", "--kv-state-agent-raw-host", "127.0.0.1", "--kv-state-agent-cache-slot", String(p * WORKERS),
    ]);
  }
  for (let p = 0; p < PROCS; p++) {
    const rec = await until(`mocker ${p}'s first worker record`, 120_000, async () => (await store.list(keys.worker(NS, `kvcr-slot-${p * WORKERS}`)))[0]?.value as WorkerRecord | undefined);
    urls.push(rec.request_url.replace(/\/v1\/generate$/, ""));
  }
  const attached = await until(`${SLOTS} active slots`, 300_000, async () => {
    const h = (await (await fetch(`${host.http_url}/health`)).json()) as { slots: { active: number } };
    return h.slots.active === SLOTS ? h : undefined;
  });
  console.log(`  attach: ${SLOTS} slots active ${((performance.now() - t0) / 1000).toFixed(1)} s after the mockers were spawned; health ${JSON.stringify(attached)}`);

  const mockerBatches = async () => {
    let n = 0;
    for (const u of urls) n += (await metrics(u)).get("kvcr_mocker_raw_batches_published_total") ?? 0;
    return n;
  };
  const agentCpu0 = await cpuSeconds(agent.pid);
  const m0 = await metrics(host.http_url);
  const runs = await runStreamClients(
    urls.map((url, i) => ({ url, workers: WORKERS, concurrency: CONCURRENCY, maxTokens: 16, promptTokens: 32, sharedPrefix: { groups: 16, tokens: 256 }, durationMs: LOAD_MS, clientIndex: i })),
  );
  const published = await mockerBatches();
  // Batches each slot's raw cursor has covered (cursor + 1: seqs run from 0 per publisher).
  const covered = async () => ((await (await fetch(`${host.http_url}/v1/slots`)).json()) as { raw_cursor: number }[]).reduce((a, s) => a + s.raw_cursor + 1, 0);
  const coveredAtEnd = await covered();
  const m1 = await metrics(host.http_url);
  const agentCpuS = (await cpuSeconds(agent.pid)) - agentCpu0;
  const seconds = Math.max(...runs.map((r) => r.elapsedMs)) / 1000;
  const drainStart = performance.now();
  await until("the agent to apply every published batch", 120_000, async () => ((await covered()) >= published ? true : undefined)).catch((e: Error) => console.log(`  ${e.message}`));
  const drainS = (performance.now() - drainStart) / 1000;
  const m2 = await metrics(host.http_url);
  const requests = runs.reduce((a, r) => a + r.requests, 0);
  const errors = runs.flatMap((r) => r.errors);
  const ops = m1.get("kvcr_agent_block_ops_total")! - (m0.get("kvcr_agent_block_ops_total") ?? 0);
  console.log(`  load: ${requests} requests in ${seconds.toFixed(1)} s (${CONCURRENCY} in flight per mocker, 16 shared 256-token prefixes), bad responses ${errors.length}`);
  console.log(`  agent: raw cursors cover ${coveredAtEnd.toLocaleString("en-US")} of ${published.toLocaleString("en-US")} batches published when the load stopped → ${(((published - coveredAtEnd) / Math.max(1, published)) * 100).toFixed(2)} % still queued (all covered ${drainS.toFixed(1)} s later); ${m1.get("kvcr_agent_raw_batches_total")!.toLocaleString("en-US")} batches applied in all (replays included); ${Math.round(ops / seconds).toLocaleString("en-US")} block ops/s; CPU ${((agentCpuS / seconds) * 100).toFixed(0)} % of a core`);
  console.log(`  slot transitions during the run: ${SLOT_STATES_SEEN.map((st) => `${st} ${(m2.get(`kvcr_agent_slot_transitions_total{state="${st}"}`) ?? 0) - (m0.get(`kvcr_agent_slot_transitions_total{state="${st}"}`) ?? 0)}`).join(", ")} (detaches = intents whose discovery lease lapsed while their mocker was starved of CPU)`);
  console.log(`  slots: ${JSON.stringify(((await (await fetch(`${host.http_url}/health`)).json()) as { slots: unknown }).slots)}`);
  console.log(`  cursor: gaps ${m2.get("kvcr_agent_raw_gaps_total")}, recovered ${m2.get("kvcr_agent_raw_batches_recovered_total")}, unrecovered (dropped) ${m2.get("kvcr_agent_raw_dropped_batches_total")}, decode errors ${m2.get("kvcr_agent_decode_errors_total")}, orphans ${m2.get("kvcr_agent_orphan_stores_total")}, faults ${m2.get("kvcr_agent_source_faults_total")}`);
  console.log(`  ingest lag (live batches): p50 ${lagQuantile(m2, 0.5)}, p99 ${lagQuantile(m2, 0.99)} over ${m2.get("kvcr_agent_ingest_lag_seconds_count")} batches`);
} finally {
  for (const p of procs.reverse()) if (p.exitCode === null) p.kill("SIGTERM");
  await Promise.race([Promise.all(procs.map((p) => p.exited)), Bun.sleep(15_000)]);
  for (const p of procs) if (p.exitCode === null) p.kill("SIGKILL");
  await store.close();
  await rm(dir, { recursive: true, force: true });
}
