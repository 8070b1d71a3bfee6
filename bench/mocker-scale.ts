// One mocker process with 1,024 workers: started through the real CLI as a child, it registers
// every worker, then serves a shared-prefix /v1/generate load while one SUB per raw PUB (our ZMTP,
// in this process) reads every batch. Prints start-up time to /health 200 (also for a 4,096-worker
// mocker), RSS per worker against a 1-worker mocker started with the same flags (RSS as read from
// the child's /proc status: nothing forces a GC in the child), events/s and batches/s published
// (the mocker's counters) and received, HWM drops and seq gaps. Under HTTP load the event rate is
// capped by token streaming (most of the mocker's CPU), so the script then measures the event path
// alone: the same engines and requests driven in this process without HTTP, each step's events
// published by the mocker's RankPublisher to a SUB in another process. Run:
// `npx bun bench/mocker-scale.ts` (~40 s; env BENCH_WORKERS, BENCH_STARTUP_WORKERS, BENCH_CONCURRENCY,
// BENCH_LOAD_MS, BENCH_MAX_REQUESTS, BENCH_GPU_BLOCKS, BENCH_UNIQUE_TOKENS, BENCH_MAX_TOKENS adjust it).
import { cpus, loadavg } from "node:os";
import { commonOptions } from "../src/config/common.ts";
import { loadConfig } from "../src/config/load.ts";
import { mockerOptions } from "../src/config/mocker.ts";
import { createEngine, type MockEngine } from "../src/core/engine/mock-engine.ts";
import { createLogger } from "../src/lib/logger.ts";
import { createBlockHasher } from "../src/lib/xxh3.ts";
import { engineConfigFrom } from "../src/roles/shared/measure/engine-config-from-options.ts";
import { RankPublisher } from "../src/roles/mocker/rank-publisher.ts";
import { createPortPlan } from "../src/transport/port-plan.ts";
import { SubCounter } from "./lib/sub-counter-client.ts";
import { decodeBatch, decodeSeq } from "../src/protocol/kv-events/index.ts";
import { SubSocket } from "../src/transport/zmtp/index.ts";
import { envNumber } from "./lib/measure.ts";
import { runStreamClients } from "./lib/clients.ts";
import { MockerChild } from "./lib/mocker-child.ts";

const WORKERS = envNumber("BENCH_WORKERS", 1024);
const STARTUP_WORKERS = envNumber("BENCH_STARTUP_WORKERS", 4096);
const CONCURRENCY = envNumber("BENCH_CONCURRENCY", 128);
const LOAD_MS = envNumber("BENCH_LOAD_MS", 8000);
const MAX_REQUESTS = envNumber("BENCH_MAX_REQUESTS", 20_000);
const GPU_BLOCKS = envNumber("BENCH_GPU_BLOCKS", 256);
const BLOCK_SIZE = 16;
/** Shared prefixes: each group's requests go to its own slice of the workers, so prefixes hit. */
const PREFIX_GROUPS = 16;
const PREFIX_TOKENS = 256;
const UNIQUE_TOKENS = envNumber("BENCH_UNIQUE_TOKENS", 32);
const MAX_TOKENS = envNumber("BENCH_MAX_TOKENS", 32);

const logger = createLogger({ level: "warn", tag: "bench" });
const flags = (workers: number) => [
  "--num-workers", String(workers),
  "--speedup-ratio", "10",
  "--num-gpu-blocks-override", String(GPU_BLOCKS),
  "--block-size", String(BLOCK_SIZE),
  "--zmq-kv-events-ports", Array.from({ length: workers }, () => "0").join(","),
];
const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MiB`;
const kib = (bytes: number) => `${(bytes / 1024).toFixed(0)} KiB`;
const per = (n: number, s: number) => `${Math.round(n / s).toLocaleString("en-US")}/s`;
const COUNTERS = [
  "kvcr_mocker_raw_batches_published_total",
  "kvcr_mocker_raw_events_published_total",
  "kvcr_mocker_raw_batches_dropped_total",
  "kvcr_mocker_generated_tokens_total",
  "kvcr_mocker_finished_requests_total",
  "kvcr_mocker_kv_events_emitted_total",
] as const;
type Counters = Record<(typeof COUNTERS)[number], number>;
async function counters(m: MockerChild): Promise<Counters> {
  const sums = await m.metricSums([...COUNTERS, "kvcr_mocker_raw_subscribers"]);
  return Object.fromEntries(COUNTERS.map((n) => [n, sums.get(n)!])) as Counters;
}

/** One SUB per raw PUB: counts batches and events, and checks seqs run 0, 1, 2, … per publisher. */
class RawReader {
  batches = 0;
  events = 0;
  gaps = 0;
  decodeErrors = 0;
  private nextSeq = 0n;
  private readonly sub = new SubSocket({ logger, receiveHighWaterMark: 100_000 });
  constructor(endpoint: string) {
    this.sub.onMessage((frames) => {
      const seq = decodeSeq(frames[1]!);
      if (seq !== this.nextSeq) this.gaps++;
      this.nextSeq = seq + 1n;
      this.batches++;
      try {
        this.events += decodeBatch(frames[2]!).events.length;
      } catch {
        this.decodeErrors++;
      }
    });
    this.sub.subscribe("");
    this.sub.connect(endpoint);
  }
  close(): void {
    this.sub.close();
  }
}

async function untilTrue(what: string, timeoutMs: number, check: () => Promise<boolean> | boolean): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!(await check())) {
    if (performance.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await Bun.sleep(20);
  }
}

/** Shared-prefix generate load from a client child process: CONCURRENCY streams, LOAD_MS or MAX_REQUESTS. */
async function load(url: string): Promise<{ requests: number; tokens: number; errors: string[]; seconds: number; clientCpuS: number }> {
  const [r] = await runStreamClients([
    {
      url,
      workers: WORKERS,
      concurrency: CONCURRENCY,
      maxTokens: MAX_TOKENS,
      promptTokens: UNIQUE_TOKENS,
      sharedPrefix: { groups: PREFIX_GROUPS, tokens: PREFIX_TOKENS },
      durationMs: LOAD_MS,
      maxRequests: MAX_REQUESTS,
      clientIndex: 0,
    },
  ]);
  return { requests: r!.requests, tokens: r!.tokens, errors: r!.errors, seconds: r!.elapsedMs / 1000, clientCpuS: r!.cpuSeconds };
}

console.log(`mocker scale: ${WORKERS} workers × 1 rank, --speedup-ratio 10, ${GPU_BLOCKS} G1 blocks × ${BLOCK_SIZE} tokens, raw PUB per worker (port 0), no replay; Bun ${Bun.version}, ${cpus().length} CPUs, load average ${loadavg()[0]!.toFixed(2)}`);

// The peer: one worker, same flags, same process shape. Its RSS is what the process costs alone.
let baselineRss: number;
let baselineHealthyMs: number;
{
  await using one = await MockerChild.spawn(flags(1));
  baselineHealthyMs = (await one.waitHealthy(30_000)).healthyMs;
  baselineRss = await one.rssBytes();
}
if (STARTUP_WORKERS !== WORKERS) {
  await using big = await MockerChild.spawn(flags(STARTUP_WORKERS));
  const s = await big.waitHealthy(120_000);
  // CPU time the child used to get there: the work itself, whatever else the machine was running.
  const cpuS = await big.cpuSeconds();
  const listed = (await big.workerRecords()).length;
  console.log(`  start-up, ${STARTUP_WORKERS.toLocaleString("en-US")} workers (${(2 * STARTUP_WORKERS).toLocaleString("en-US")} listeners: raw PUB + relay each): /health 200 after ${(s.healthyMs / 1000).toFixed(2)} s from spawn, ${cpuS.toFixed(2)} s of CPU (${listed} records listed), RSS ${mib(await big.rssBytes())}`);
}

let loadEventsPerS = 0;
let loadRequests = 0;
await using mocker = await MockerChild.spawn(flags(WORKERS));
const startup = await mocker.waitHealthy(120_000);
const records = await mocker.workerRecords();
if (records.length !== WORKERS) throw new Error(`/health is 200 but discovery shows ${records.length} of ${WORKERS} worker records`);
const rssHealthy = await mocker.rssBytes();
console.log(`  start-up: /health 200 after ${(startup.healthyMs / 1000).toFixed(2)} s (first worker record after ${(startup.firstRecordMs / 1000).toFixed(2)} s; all ${records.length} records listed); 1 worker: ${(baselineHealthyMs / 1000).toFixed(2)} s`);
console.log(`  memory: RSS ${mib(rssHealthy)} at healthy vs ${mib(baselineRss)} for 1 worker → ${kib((rssHealthy - baselineRss) / (WORKERS - 1))} per worker`);

const readers = records.sort((a, b) => a.worker_index - b.worker_index).map((r) => new RawReader(r.raw_endpoints[0]!));
try {
  const joinStart = performance.now();
  await untilTrue(`all ${WORKERS} raw PUBs to see their subscriber`, 60_000, async () => (await mocker.metricSums(["kvcr_mocker_raw_subscribers"])).get("kvcr_mocker_raw_subscribers") === WORKERS);
  console.log(`  subscribers: ${WORKERS} SUB sockets (this process) joined in ${((performance.now() - joinStart) / 1000).toFixed(2)} s`);

  const before = await counters(mocker);
  const cpu0 = await mocker.cpuSeconds();
  const run = await load(mocker.httpUrl);
  const mockerCpuS = (await mocker.cpuSeconds()) - cpu0;
  const after = await counters(mocker);
  const d = Object.fromEntries(COUNTERS.map((n) => [n, after[n] - before[n]])) as Counters;
  const published = d.kvcr_mocker_raw_batches_published_total;
  const received = () => readers.reduce((n, r) => n + r.batches, 0);
  await untilTrue("the subscribers to receive every published batch", 30_000, () => received() >= after.kvcr_mocker_raw_batches_published_total);
  const s = run.seconds;
  const gaps = readers.reduce((n, r) => n + r.gaps, 0);
  const decodeErrors = readers.reduce((n, r) => n + r.decodeErrors, 0);
  const eventsReceived = readers.reduce((n, r) => n + r.events, 0);
  console.log(`  load: ${run.requests} requests (${CONCURRENCY} in flight, ${PREFIX_GROUPS} shared ${PREFIX_TOKENS}-token prefixes, max_tokens ${MAX_TOKENS}) in ${s.toFixed(1)} s: ${per(run.requests, s)} requests, ${per(run.tokens, s)} tokens; CPU: mocker ${((mockerCpuS / s) * 100).toFixed(0)}% of a core, client ${((run.clientCpuS / s) * 100).toFixed(0)}%; bad responses ${run.errors.length}${run.errors.length ? ` (${run.errors.slice(0, 3).join("; ")})` : ""}`);
  console.log(`  published (mocker counters): ${per(d.kvcr_mocker_raw_events_published_total, s)} events, ${per(published, s)} batches (engines emitted ${d.kvcr_mocker_kv_events_emitted_total} events, published ${d.kvcr_mocker_raw_events_published_total})`);
  console.log(`  received (${WORKERS} SUBs): ${per(eventsReceived, s)} events, ${per(received(), s)} batches; in all ${received().toLocaleString("en-US")} batches and ${eventsReceived.toLocaleString("en-US")} events = ${after.kvcr_mocker_raw_batches_published_total.toLocaleString("en-US")} and ${after.kvcr_mocker_raw_events_published_total.toLocaleString("en-US")} published`);
  const clean = after.kvcr_mocker_raw_batches_dropped_total === 0 && gaps === 0 && decodeErrors === 0 && received() === after.kvcr_mocker_raw_batches_published_total;
  console.log(`  drops: kvcr_mocker_raw_batches_dropped_total ${after.kvcr_mocker_raw_batches_dropped_total}, seq gaps at the SUBs ${gaps}, undecodable ${decodeErrors} → ${clean ? "no batch dropped" : "BATCHES LOST"}`);
  const rssAfter = await mocker.rssBytes();
  console.log(`  memory after the load: RSS ${mib(rssAfter)} (as read, no GC forced in the child) → ${kib((rssAfter - baselineRss) / (WORKERS - 1))} per worker (caches filled, ${WORKERS} subscriber connections)`);
  loadEventsPerS = d.kvcr_mocker_raw_events_published_total / s;
  loadRequests = run.requests;
} finally {
  for (const r of readers) r.close();
}
await mocker[Symbol.asyncDispose]();

const path = await eventPath(loadRequests);
console.log(`  event path without HTTP (same ${WORKERS} engines and ${path.requests} requests in this process, RankPublisher → one SUB process on all PUBs): ${per(path.events, path.seconds)} events, ${per(path.batches, path.seconds)} batches in ${path.seconds.toFixed(2)} s; ${(path.events / path.seconds / loadEventsPerS).toFixed(1)}× the rate under HTTP load; delivered ${path.received.toLocaleString("en-US")}/${path.batches.toLocaleString("en-US")}, dropped ${path.dropped}`);

/**
 * The mocker's event path alone: engines stepped as fast as they go (virtual time), each step's
 * events through RankPublisher.publish (map + encode + PUB send), a SUB in another process.
 */
async function eventPath(requests: number): Promise<{ requests: number; events: number; batches: number; seconds: number; received: number; dropped: number }> {
  const config = loadConfig({ ...mockerOptions, ...commonOptions }, { argv: flags(WORKERS) }).config;
  const hasher = createBlockHasher();
  const engines: MockEngine[] = Array.from({ length: WORKERS }, () => createEngine(engineConfigFrom(config), { hasher }));
  const plan = createPortPlan();
  const pubs = engines.map(() => new RankPublisher({ host: "127.0.0.1", port: 0, topic: "", dataParallelRank: 0, kvcrOwnsHost: false, logger, ports: plan }));
  try {
    await using child = await SubCounter.start(pubs.map((p) => p.endpoint));
    await untilTrue("the SUB process to reach every PUB", 60_000, () => pubs.every((p) => p.subscriberCount() === 1));
    // The load client's requests, CONCURRENCY in flight as its closed loop keeps them: request n
    // uses prefix n % groups on that group's slice of the workers.
    const prefixes = Array.from({ length: PREFIX_GROUPS }, (_, g) => Array.from({ length: PREFIX_TOKENS }, (_, i) => (g * 7919 + i * 31) % 32_000));
    const perGroup = Math.max(1, Math.floor(WORKERS / PREFIX_GROUPS));
    let started = 0;
    const startOne = () => {
      const n = started++;
      const group = n % PREFIX_GROUPS;
      const worker = (group * perGroup + (Math.floor(n / PREFIX_GROUPS) % perGroup)) % WORKERS;
      const unique = Array.from({ length: UNIQUE_TOKENS }, (_, i) => (n * 101 + i) % 32_000);
      const added = engines[worker]!.addRequest({ id: `r${n}`, tokenIds: [...prefixes[group]!, ...unique], maxTokens: MAX_TOKENS });
      if (!added.ok) throw new Error(`request ${n}: ${added.reason}`);
    };
    while (started < Math.min(CONCURRENCY, requests)) startOne();
    const received0 = await child.received();
    const t0 = performance.now();
    let events = 0;
    let nowMs = 0;
    for (let busy = true; busy; nowMs += 1) {
      busy = false;
      const ts = Date.now() / 1000;
      for (let w = 0; w < WORKERS; w++) {
        const e = engines[w]!;
        if (e.pendingRequests === 0 && e.nextWakeMs() === undefined) continue;
        busy = true;
        const step = e.step(nowMs);
        if (step.events.length > 0) {
          pubs[w]!.publish(step.events, ts);
          events += step.events.length;
        }
        for (let f = 0; f < step.finished.length && started < requests; f++) startOne();
      }
      await new Promise((r) => setImmediate(r)); // sockets flush between rounds, as in the live loop
    }
    const seconds = (performance.now() - t0) / 1000;
    const batches = pubs.reduce((n, p) => n + p.stats().batchesPublished, 0);
    const dropped = pubs.reduce((n, p) => n + p.stats().batchesDroppedByHwm, 0);
    let received = 0;
    await untilTrue("the SUB process to receive every batch", 30_000, async () => (received = (await child.received()) - received0) >= batches - dropped);
    return { requests, events, batches, seconds, received, dropped };
  } finally {
    for (const p of pubs) p.close();
  }
}
