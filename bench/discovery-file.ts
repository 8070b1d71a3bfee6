// File discovery figures: put rate, list() cost (cold vs cached) at 1k and 4k records, and how fast
// a change reaches a watcher with fs.watch vs poll only. Run: npx bun bench/discovery-file.ts
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { defaultDiscoveryDir, openFileDiscoveryStore, type FileDiscoveryStore } from "../src/discovery/file-store.ts";
import { keys } from "../src/discovery/keys.ts";
import type { DiscoveryEvent } from "../src/discovery/store.ts";

const quiet = { warn: (m: string) => console.error(m), debug: () => {} };
const workerValue = (i: number) => ({ model: "mock-model", request_url: `http://127.0.0.1:8000/v1/generate`, worker: i, dp_size: 2, block_size: 16, total_blocks: 8192, event_mode: "direct", endpoints: [`tcp://127.0.0.1:${20000 + i}`] });

/** Where the default discovery dir lives (tmpfs on Linux): list/watch figures are taken there. */
const DEFAULT_BASE = dirname(defaultDiscoveryDir());

async function withDir<T>(fn: (dir: string) => Promise<T>, base = DEFAULT_BASE): Promise<T> {
  const dir = await mkdtemp(join(base, "kvcr-disc-bench-"));
  try {
    return await fn(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;
const p99 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length * 0.99)] ?? NaN;

async function listFigures(records: number): Promise<void> {
  await withDir(async (dir) => {
    // Long TTL: renewals must not run during the measurement.
    const writer = await openFileDiscoveryStore({ dir, leaseTtlMs: 600_000, logger: quiet });
    let t = performance.now();
    for (let i = 0; i < records; i++) await writer.put(keys.worker("dynamo", `w${i}`), workerValue(i));
    const putMs = performance.now() - t;

    const reader = await openFileDiscoveryStore({ dir, logger: quiet });
    t = performance.now();
    const cold = await reader.list(keys.kindPrefix("dynamo", "worker"));
    const coldMs = performance.now() - t;
    const warm: number[] = [];
    for (let i = 0; i < 5; i++) {
      t = performance.now();
      await reader.list(keys.kindPrefix("dynamo", "worker"));
      warm.push(performance.now() - t);
    }
    if (cold.length !== records) throw new Error(`listed ${cold.length} of ${records}`);
    console.log(
      `records=${records}  put: ${(records / (putMs / 1000)).toFixed(0)} records/s (sequential)  ` +
        `list cold: ${coldMs.toFixed(1)} ms  list cached: ${median(warm).toFixed(1)} ms (cold/cached ${(coldMs / median(warm)).toFixed(1)}x)`,
    );
    await reader.close();
    t = performance.now();
    await writer.close(); // withdraws every record
    console.log(`records=${records}  close (withdraw all): ${(performance.now() - t).toFixed(1)} ms`);
  });
}

async function propagation(useFsWatch: boolean, pollIntervalMs: number, samples: number): Promise<number[]> {
  return withDir(async (dir) => {
    const writer = await openFileDiscoveryStore({ dir, leaseTtlMs: 600_000, logger: quiet });
    const watcher: FileDiscoveryStore = await openFileDiscoveryStore({ dir, pollIntervalMs, useFsWatch, logger: quiet });
    let resolveEvent: ((e: DiscoveryEvent) => void) | undefined;
    const w = await watcher.watch("dynamo/", (e) => resolveEvent?.(e));
    const latencies: number[] = [];
    const rec = await writer.put(keys.agent("dynamo", "probe"), 0);
    for (let i = 1; i <= samples; i++) {
      const seen = new Promise<DiscoveryEvent>((r) => (resolveEvent = r));
      const t = performance.now();
      await rec.update(i);
      await seen;
      latencies.push(performance.now() - t);
    }
    await w.close();
    await watcher.close();
    await writer.close();
    return latencies;
  });
}

/** CPU an owner spends keeping `records` records alive (TTL 3 s: its one lease file rewritten once a second). */
async function renewalCost(records: number, windowMs: number, base: string): Promise<number> {
  return withDir(async (dir) => {
    const owner = await openFileDiscoveryStore({ dir, leaseTtlMs: 3_000, logger: quiet });
    for (let i = 0; i < records; i++) await owner.put(keys.worker("dynamo", `w${i}`), workerValue(i));
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    await Bun.sleep(windowMs); // a measurement window, not a wait for a condition
    const cpu = process.cpuUsage(cpu0);
    const coreShare = (cpu.user + cpu.system) / 1000 / (performance.now() - t0);
    console.log(`keeping ${records} records alive in ${base} (TTL 3 s, one lease file renewed every 1 s): ${(coreShare * 100).toFixed(2)}% of a core`);
    await owner.close();
    return coreShare;
  }, base);
}

console.log(`file discovery bench (bun ${Bun.version}, ${process.platform}; list/watch figures in ${DEFAULT_BASE})`);
await listFigures(1_000);
await listFigures(4_000);
const onDisk = await renewalCost(1_000, 3_000, tmpdir());
if (DEFAULT_BASE !== tmpdir()) {
  const onDefault = await renewalCost(1_000, 3_000, DEFAULT_BASE);
  console.log(`keep-alive CPU, ${tmpdir()} vs ${DEFAULT_BASE} (where the default dir lives): ${(onDisk / onDefault).toFixed(1)}x`);
}
const fsw = await propagation(true, 250, 200);
const poll = await propagation(false, 250, 16);
console.log(`update → watcher event, fs.watch + 250 ms poll: median ${median(fsw).toFixed(2)} ms, p99 ${p99(fsw).toFixed(2)} ms (200 samples)`);
console.log(`update → watcher event, poll only (250 ms):   median ${median(poll).toFixed(2)} ms, p99 ${p99(poll).toFixed(2)} ms (16 samples; updates phase-lock to the poll, so this is the worst case)`);
console.log(`fs.watch speed-up over poll-only: ${(median(poll) / median(fsw)).toFixed(0)}x`);
