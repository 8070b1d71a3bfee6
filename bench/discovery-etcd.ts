// etcd discovery figures beside the file backend, measured in the same run: put rate (sequential
// and 64 in flight), change → watcher latency, lease keep-alive cost for a process holding many
// records, and failover: etcd SIGKILLed and restarted under 12 owner processes' worth of stores
// holding 2,052 worker records → time until etcd serves, until every store is connected again and a
// watcher sees a fresh change; how many records the watcher saw deleted (must be 0).
// Needs /usr/bin/etcd (apt-get install -y etcd-server). Run: npx bun bench/discovery-etcd.ts [runs]
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startEtcd, type EtcdServer } from "../test/etcd.ts";
import { openEtcdDiscoveryStore } from "../src/discovery/etcd-store.ts";
import { defaultDiscoveryDir, openFileDiscoveryStore } from "../src/discovery/file-store.ts";
import { keys } from "../src/discovery/keys.ts";
import type { DiscoveryEvent, DiscoveryStore } from "../src/discovery/store.ts";
import { dirname } from "node:path";
import { machineLine } from "./lib/machine.ts";

const quiet = { warn: () => {}, debug: () => {} };
const RUNS = Number(process.argv[2] ?? 3);
const workerValue = (i: number) => ({ model: "mock-model", request_url: `http://127.0.0.2:8000/v1/generate`, worker: i, dp_size: 1, block_size: 16, total_blocks: 8192, event_mode: "kvcr", endpoints: [`tcp://127.0.0.2:${20000 + i}`] });
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;
const p99 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length * 0.99)] ?? NaN;

type Backend = "etcd" | "file";
let etcd: EtcdServer;
let nsSeq = 0;

async function withStores<T>(backend: Backend, n: number, leaseTtlMs: number, fn: (stores: DiscoveryStore[]) => Promise<T>): Promise<T> {
  const dir = backend === "file" ? await mkdtemp(join(dirname(defaultDiscoveryDir()), "kvcr-disc-bench-")) : "";
  const stores: DiscoveryStore[] = [];
  try {
    for (let i = 0; i < n; i++) {
      stores.push(backend === "etcd" ? await openEtcdDiscoveryStore({ endpoints: etcd.endpoint, leaseTtlMs, logger: quiet }) : await openFileDiscoveryStore({ dir, leaseTtlMs, logger: quiet }));
    }
    return await fn(stores);
  } finally {
    for (const s of stores) await s.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  }
}

/** Records/s for `records` puts, `inFlight` at a time. */
async function putRate(backend: Backend, records: number, inFlight: number): Promise<number> {
  return withStores(backend, 1, 600_000, async ([s]) => {
    const ns = `bench${++nsSeq}`;
    let next = 0;
    const t = performance.now();
    await Promise.all(Array.from({ length: inFlight }, async () => {
      for (let i = next++; i < records; i = next++) await s!.put(keys.worker(ns, `w${i}`), workerValue(i));
    }));
    return records / ((performance.now() - t) / 1000);
  });
}

/** ms from calling update() to the other client's put event. */
async function watchLatency(backend: Backend, samples: number): Promise<number[]> {
  return withStores(backend, 2, 600_000, async ([writer, reader]) => {
    const ns = `bench${++nsSeq}`;
    const rec = await writer!.put(keys.worker(ns, "w"), { n: 0 });
    let resolve: (() => void) | undefined;
    const w = await reader!.watch(keys.namespacePrefix(ns), (e: DiscoveryEvent) => {
      if (e.type === "put" && (e.entry.value as { n: number }).n > 0) resolve?.();
    });
    const out: number[] = [];
    for (let n = 1; n <= samples; n++) {
      const seen = new Promise<void>((r) => (resolve = r));
      const t = performance.now();
      await rec.update({ n });
      await seen;
      out.push(performance.now() - t);
    }
    await w.close();
    return out;
  });
}

function cpuSecondsOf(pid: number | undefined): Promise<number> {
  if (!pid) return Promise.resolve(NaN);
  return readFile(`/proc/${pid}/stat`, "utf8").then((t) => {
    const f = t.slice(t.lastIndexOf(")") + 2).split(" ");
    return (Number(f[11]) + Number(f[12])) / 100; // utime + stime, clock ticks (100/s)
  });
}

/** Share of a core the owner (and etcd) spend keeping `records` alive at a 3 s TTL for `windowMs`. */
async function keepAliveCost(backend: Backend, records: number, windowMs: number): Promise<{ owner: number; etcd: number }> {
  return withStores(backend, 1, 3_000, async ([s]) => {
    const ns = `bench${++nsSeq}`;
    for (let i = 0; i < records; i++) await s!.put(keys.worker(ns, `w${i}`), workerValue(i));
    const cpu0 = process.cpuUsage();
    const e0 = await cpuSecondsOf(etcd.pid());
    await Bun.sleep(windowMs); // the measured window: only renewals run
    const cpu = process.cpuUsage(cpu0);
    const e1 = await cpuSecondsOf(etcd.pid());
    return { owner: (cpu.user + cpu.system) / 1000 / windowMs, etcd: backend === "etcd" ? ((e1 - e0) * 1000) / windowMs : 0 };
  });
}

interface FailoverRun {
  servingMs: number;
  watchMs: number;
  allListedMs: number;
  deleted: number;
  listed: number;
}

/**
 * 12 stores × 171 records (the reference shape's 2,052 workers), one watcher; etcd SIGKILLed and
 * restarted. Times from the kill: etcd serving again; the watcher delivering a change made after
 * it; all 2,052 records listed again.
 */
async function failover(): Promise<FailoverRun> {
  return withStores("etcd", 13, 10_000, async (stores) => {
    const ns = `bench${++nsSeq}`;
    const observer = stores[12]!;
    const owners = stores.slice(0, 12);
    await Promise.all(owners.map(async (s, p) => {
      for (let i = 0; i < 171; i++) await s.put(keys.worker(ns, `p${p}-w${i}`), workerValue(i));
    }));
    let deleted = 0;
    let probeSeen: (() => void) | undefined;
    const w = await observer.watch(keys.namespacePrefix(ns), (e) => {
      if (e.type === "delete") deleted++;
      else if (e.entry.key.endsWith("/probe")) probeSeen?.();
    });
    const t = performance.now();
    await etcd.kill();
    await etcd.restart();
    const servingMs = performance.now() - t;
    const seen = new Promise<void>((r) => (probeSeen = r));
    await owners[0]!.put(keys.worker(ns, "probe"), 1);
    await seen;
    const watchMs = performance.now() - t;
    // Every record listed again (etcd restores them and their leases from its data dir).
    const deadline = performance.now() + 30_000;
    while ((await observer.list(keys.kindPrefix(ns, "worker")).catch(() => [])).length < 2_053) {
      if (performance.now() > deadline) throw new Error("not every record listed within 30 s of the restart");
      await Bun.sleep(20);
    }
    const allListedMs = performance.now() - t;
    const listed = (await observer.list(keys.kindPrefix(ns, "worker"))).length - 1;
    await w.close();
    return { servingMs, watchMs, allListedMs, deleted, listed };
  });
}

// Data on disk, as a production etcd keeps it (every write is fsynced there).
etcd = await startEtcd({ fast: false, dataDirBase: tmpdir() });
const version = (await (await fetch(`${etcd.endpoint}/version`)).json()) as { etcdserver: string };
console.log(`etcd ${version.etcdserver} (Debian etcd-server, one member, data dir ${etcd.dataDir}); file backend in ${dirname(defaultDiscoveryDir())}; ${RUNS} runs, median shown`);
console.log(machineLine());
try {
  for (const backend of ["etcd", "file"] as const) {
    const seq: number[] = [];
    const par: number[] = [];
    const lat: number[][] = [];
    const cost: { owner: number; etcd: number }[] = [];
    for (let r = 0; r < RUNS; r++) {
      seq.push(await putRate(backend, 2_052, 1));
      par.push(await putRate(backend, 2_052, 64));
      lat.push(await watchLatency(backend, 200));
      cost.push(await keepAliveCost(backend, 2_052, 6_000));
    }
    console.log(
      `${backend}: puts ${median(seq).toFixed(0)}/s sequential, ${median(par).toFixed(0)}/s with 64 in flight (2,052 worker records); ` +
        `change -> watcher median ${median(lat.map(median)).toFixed(2)} ms, p99 ${median(lat.map(p99)).toFixed(2)} ms; ` +
        `keeping 2,052 records alive (TTL 3 s): owner ${(median(cost.map((c) => c.owner)) * 100).toFixed(2)}% of a core` +
        (backend === "etcd" ? `, etcd ${(median(cost.map((c) => c.etcd)) * 100).toFixed(2)}%` : ""),
    );
  }
  const runs: FailoverRun[] = [];
  for (let r = 0; r < RUNS; r++) runs.push(await failover());
  console.log(
    `etcd restart (SIGKILL + start, 12 owners x 171 records, TTL 10 s): serving again after ${median(runs.map((r) => r.servingMs)).toFixed(0)} ms, ` +
      `watcher delivers a new change after ${median(runs.map((r) => r.watchMs)).toFixed(0)} ms, all 2,052 records listed after ${median(runs.map((r) => r.allListedMs)).toFixed(0)} ms; ` +
      `records dropped: ${Math.max(...runs.map((r) => r.deleted))} deleted events, ${Math.min(...runs.map((r) => r.listed))}/2052 listed after`,
  );
} finally {
  await etcd[Symbol.asyncDispose]();
}
