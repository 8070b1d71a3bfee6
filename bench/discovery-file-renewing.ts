// File discovery under renewal load, as a frontend starting beside many renewing workers meets it:
// one store puts N worker + N attachment records with a short TTL so they keep renewing (every
// TTL/3), then a second store watches both prefixes the way the frontend does (attachments, then
// workers) and we time each watch() until its initial list is out, then how long a change takes to
// arrive while renewals run, and the watcher's CPU share over a window.
// Run: npx bun bench/discovery-file-renewing.ts
// (env BENCH_SIZES="1000,2000", BENCH_TTL_MS=3000, BENCH_DIR_BASE=/tmp, BENCH_WATCH_TIMEOUT_MS=120000).
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openFileDiscoveryStore } from "../src/discovery/file-store.ts";
import { keys } from "../src/discovery/keys.ts";
import type { DiscoveryEvent, DiscoveryWatch } from "../src/discovery/store.ts";
import { machineLine } from "./lib/machine.ts";
import { envNumber } from "./lib/measure.ts";

// 4000 (8,000 records rewritten every second by this one process, on /tmp) saturates the process
// itself; pass it explicitly with a longer TTL (BENCH_TTL_MS=10000) to go that far.
const SIZES = (process.env.BENCH_SIZES ?? "1000,2000").split(",").map(Number);
const TTL_MS = envNumber("BENCH_TTL_MS", 3_000);
const BASE = process.env.BENCH_DIR_BASE ?? tmpdir(); // where `up` (and up-scale) put the dir
const WATCH_TIMEOUT_MS = envNumber("BENCH_WATCH_TIMEOUT_MS", 120_000);
const NS = "dynamo";

let lapses = 0;
const quiet = { warn: (m: string) => { if (m.includes("lapsed")) lapses++; else console.error(m); }, debug: () => {} };
const workerValue = (i: number) => ({ model: "mock-model", request_url: "http://127.0.0.1:8000/v1/generate", worker: i, dp_size: 1, block_size: 16, total_blocks: 8192, endpoints: [`tcp://127.0.0.1:${20000 + i}`] });
const attachmentValue = (i: number) => ({ worker: `w${i}`, rank: 0, slot: i, agent: "a0", state: "attached" });

/** Puts with a few in flight, like several processes registering at once. */
async function putAll(store: Awaited<ReturnType<typeof openFileDiscoveryStore>>, items: [string, unknown][]): Promise<void> {
  let next = 0;
  const lane = async () => {
    for (let i = next++; i < items.length; i = next++) await store.put(items[i]![0], items[i]![1]);
  };
  await Promise.all(Array.from({ length: 16 }, lane));
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T | "timeout"> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  return Promise.race([p, new Promise<"timeout">((r) => (timer = setTimeout(() => r("timeout"), ms)))]).finally(() => clearTimeout(timer));
}

interface Figures {
  listed: number;
  attachWatchMs: number | "timeout";
  workerWatchMs: number | "timeout";
  changeMs: number | "timeout";
  watcherCpu: number;
}

async function once(n: number): Promise<Figures> {
  const dir = await mkdtemp(join(BASE, "kvcr-disc-renew-"));
  const owner = await openFileDiscoveryStore({ dir, leaseTtlMs: TTL_MS, logger: quiet });
  const reader = await openFileDiscoveryStore({ dir, leaseTtlMs: TTL_MS, logger: quiet });
  const watches: DiscoveryWatch[] = [];
  try {
    const items: [string, unknown][] = [];
    for (let i = 0; i < n; i++) items.push([keys.worker(NS, `w${i}`), workerValue(i)], [keys.attachment(NS, `w${i}:0`), attachmentValue(i)]);
    await putAll(owner, items);
    await Bun.sleep(TTL_MS / 3 + 100); // renewals are running from here on (not a wait for a condition)

    let puts = 0;
    let onChange: ((e: DiscoveryEvent) => void) | undefined;
    const listener = (e: DiscoveryEvent) => {
      if (e.type === "put") puts++;
      onChange?.(e);
    };
    const cpu0 = process.cpuUsage();
    let t = performance.now();
    const a = await withTimeout(reader.watch(keys.kindPrefix(NS, "attachment"), listener), WATCH_TIMEOUT_MS);
    const attachWatchMs = a === "timeout" ? a : performance.now() - t;
    if (a !== "timeout") watches.push(a);
    t = performance.now();
    const w = a === "timeout" ? "timeout" : await withTimeout(reader.watch(keys.kindPrefix(NS, "worker"), listener), WATCH_TIMEOUT_MS);
    const workerWatchMs = w === "timeout" ? w : performance.now() - t;
    if (w !== "timeout") watches.push(w);
    const listed = puts; // below 2N if a scan outlasted the remaining lease of records read early in it

    // A new record while renewals run: how long until the watcher sees it.
    const probeKey = keys.worker(NS, "probe");
    const seen = new Promise<void>((r) => (onChange = (e) => e.type === "put" && e.entry.key === probeKey && r()));
    t = performance.now();
    await owner.put(probeKey, workerValue(n));
    const s = await withTimeout(seen, WATCH_TIMEOUT_MS);
    const changeMs = s === "timeout" ? s : performance.now() - t;
    const cpu = process.cpuUsage(cpu0);
    return { listed, attachWatchMs, workerWatchMs, changeMs, watcherCpu: (cpu.user + cpu.system) / 1000 };
  } finally {
    for (const w of watches) await w.close();
    await reader.close();
    await owner.close();
    await rm(dir, { recursive: true, force: true });
  }
}

const fmt = (x: number | "timeout") => (x === "timeout" ? `>${WATCH_TIMEOUT_MS / 1000} s` : `${x.toFixed(0)} ms`);
console.log(`file discovery under renewal load (bun ${Bun.version}; dir in ${BASE}; TTL ${TTL_MS} ms → each record rewritten every ${Math.floor(TTL_MS / 3)} ms)`);
for (const n of SIZES) {
  const f = await once(n);
  console.log(
    `N=${n} workers + ${n} attachments (${((2 * n) / (TTL_MS / 3000)).toFixed(0)} renewals/s): watch(attachments) ${fmt(f.attachWatchMs)}, ` +
      `then watch(workers) ${fmt(f.workerWatchMs)} (initial lists: ${f.listed} of ${2 * n} records); new record → watcher ${fmt(f.changeMs)}; process CPU over both watches + change ${f.watcherCpu.toFixed(0)} ms`,
  );
}
console.log(machineLine("shared with other engineers' jobs"));
