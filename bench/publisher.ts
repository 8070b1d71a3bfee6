// Raw KV-event publishing at mocker scale: 1,024 RankPublishers (and 1,024
// direct-mode relays) in one process. Prints memory per publisher, the hot-path cost of publish()
// against the bare codec on the same events (the peer), and events/s delivered over loopback to a
// SUB connected to every publisher, with HWM drops. Run: `npx bun bench/publisher.ts` (~10 s;
// BENCH_PUBLISHERS, BENCH_ROUND_MS, BENCH_ROUNDS, BENCH_LIVE_MS adjust it).
import type { KvEvent } from "../src/core/kv/kv-events.ts";
import { createLogger } from "../src/lib/logger.ts";
import { encodeBatch } from "../src/protocol/kv-events/index.ts";
import { encodeRouterEvents, type RouterEvent } from "../src/protocol/router-events.ts";
import { RankPublisher, REPLAY_BATCHES } from "../src/roles/mocker/rank-publisher.ts";
import { toVllmEvents } from "../src/roles/mocker/raw-events.ts";
import { RouterEventRelay } from "../src/roles/mocker/router-event-relay.ts";
import { createPortPlan } from "../src/transport/port-plan.ts";
import { SubCounter } from "./lib/sub-counter-client.ts";
import { envNumber, measure } from "./lib/measure.ts";

const PUBLISHERS = envNumber("BENCH_PUBLISHERS", 1024);
const LIVE_MS = envNumber("BENCH_LIVE_MS", 3000);
const opts = { roundMs: envNumber("BENCH_ROUND_MS", 300), rounds: envNumber("BENCH_ROUNDS", 3) };
const BLOCK_SIZE = 16;
const logger = createLogger({ level: "warn", tag: "bench" });

/**
 * A typical decode-heavy mocker step with KV activity: 4 new device blocks stored (a prefill chunk
 * or finished decode blocks) and 2 evicted. Hashes differ per publisher and per step, as real ones do.
 */
let counter = 1n;
function step(): KvEvent[] {
  const seq = [counter++, counter++, counter++, counter++];
  return [
    { kind: "stored", tier: "device", parentHash: counter, blockHashes: seq, localHashes: seq.map((h) => h ^ 0x5555n), tokenIds: new Uint32Array(4 * BLOCK_SIZE).fill(31_000), blockSize: BLOCK_SIZE },
    { kind: "removed", tier: "device", blockHashes: [seq[0]!, seq[1]!] },
  ];
}
const EVENTS_PER_STEP = 2;
const steps = Array.from({ length: 256 }, step);

const mb = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MiB`;
const rate = (n: number) => `${(n / 1e6).toFixed(2)} M/s`;
Bun.gc(true);
const rss0 = process.memoryUsage().rss;
const pubs: RankPublisher[] = [];
const relays: RouterEventRelay[] = [];
try {
  const t0 = performance.now();
  // Port 0 through a port plan, as the mocker binds them (consecutive free ports, no kernel search).
  const plan = createPortPlan();
  for (let i = 0; i < PUBLISHERS; i++) pubs.push(new RankPublisher({ host: "127.0.0.1", port: 0, topic: "", dataParallelRank: 0, kvcrOwnsHost: false, logger, ports: plan }));
  const startMs = performance.now() - t0;
  Bun.gc(true);
  const rss1 = process.memoryUsage().rss;
  for (let i = 0; i < PUBLISHERS; i++) relays.push(new RouterEventRelay({ host: "127.0.0.1", workerId: `bench-${i}`, dataParallelSize: 1, logger }));
  console.log(`RankPublisher × ${PUBLISHERS}, Bun ${Bun.version}`);
  console.log(`  bind all: ${startMs.toFixed(0)} ms; memory per publisher (RSS, no replay): ${((rss1 - rss0) / PUBLISHERS / 1024).toFixed(1)} KiB`);
  const payloadBytes = encodeBatch({ ts: 1.5, events: toVllmEvents(steps[0]!, false), dataParallelRank: 0 }).length;
  console.log(`  step = 4 blocks × ${BLOCK_SIZE} tokens stored + 2 removed: ${payloadBytes} B payload; a full replay buffer (${REPLAY_BATCHES} batches) holds ${mb(payloadBytes * REPLAY_BATCHES)} per publisher`);

  // ---- hot path, no subscriber: what every engine step costs the mocker ----
  let k = 0;
  const premapped = steps.map((s) => toVllmEvents(s, false));
  const routerEvents: RouterEvent[][] = steps.map((s) => [
    { holder: { workerId: "bench-0", dpRank: 0 }, tier: "device", kind: "stored", blocks: (s[0] as { blockHashes: bigint[] }).blockHashes.map((h) => ({ seqHash: h, localHash: h })), parentHash: null },
    { holder: { workerId: "bench-0", dpRank: 0 }, tier: "device", kind: "removed", blocks: (s[1] as { blockHashes: bigint[] }).blockHashes.map((h) => ({ seqHash: h, localHash: h })), parentHash: null },
  ]);
  const r = measure(
    [
      { name: "publish", unitsPerOp: EVENTS_PER_STEP, run: () => (pubs[k++ % PUBLISHERS]!.publish(steps[k & 255]!, 1.5), 1) },
      { name: "codec", unitsPerOp: EVENTS_PER_STEP, run: () => encodeBatch({ ts: 1.5, events: premapped[k++ & 255]!, dataParallelRank: 0 }).length },
      { name: "relay", unitsPerOp: EVENTS_PER_STEP, run: () => { const rl = relays[k++ % PUBLISHERS]!; rl.publish(0, steps[k & 255]!); rl.flush(); return 1; } },
      { name: "relay-codec", unitsPerOp: EVENTS_PER_STEP, run: () => encodeRouterEvents(routerEvents[k++ & 255]!).length },
    ],
    opts,
  );
  const [pub, codec, relay, relayCodec] = ["publish", "codec", "relay", "relay-codec"].map((n) => r.get(n)!) as [number, number, number, number];
  console.log(`  raw publish(), no subscriber:  ${rate(pub)} events (${rate(pub / EVENTS_PER_STEP)} batches); codec alone ${rate(codec)}: ${(pub / codec).toFixed(2)}x of the codec`);
  console.log(`  relay publish()+flush():        ${rate(relay)} events; router codec alone ${rate(relayCodec)}: ${(relay / relayCodec).toFixed(2)}x`);

  // ---- live over loopback: a SUB in a child process connected to every publisher (the agent's
  // or an `events` tap's side), rounds of one step per publisher as the live loop makes them ----
  await using child = await SubCounter.start(pubs.map((p) => p.endpoint));
  const joinDeadline = performance.now() + 20_000;
  while (pubs.some((p) => p.subscriberCount() === 0)) {
    if (performance.now() > joinDeadline) throw new Error("subscriptions did not reach every publisher within 20 s");
    await new Promise((res) => setTimeout(res, 5));
  }
  const total = () => pubs.reduce((n, p) => n + p.stats().batchesPublished, 0);
  const totalDropped = () => pubs.reduce((n, p) => n + p.stats().batchesDroppedByHwm, 0);
  const [sentBefore, droppedBefore, receivedBefore] = [total(), totalDropped(), await child.received()];
  const liveStart = performance.now();
  let rounds = 0;
  let publishMs = 0;
  while (performance.now() - liveStart < LIVE_MS) {
    const ts = Date.now() / 1000;
    const t = performance.now();
    for (let i = 0; i < PUBLISHERS; i++) pubs[i]!.publish(steps[(rounds + i) & 255]!, ts);
    publishMs += performance.now() - t;
    rounds++;
    await new Promise((res) => setImmediate(res)); // sockets flush between rounds, as in the live loop
  }
  const sent = total() - sentBefore;
  const dropped = totalDropped() - droppedBefore;
  const sendS = (performance.now() - liveStart) / 1000;
  let received = 0;
  const drainDeadline = performance.now() + 20_000;
  while ((received = (await child.received()) - receivedBefore) < sent - dropped && performance.now() < drainDeadline) await new Promise((res) => setTimeout(res, 20));
  console.log(`  live to a SUB process on all ${PUBLISHERS} PUBs: ${rate((sent * EVENTS_PER_STEP) / sendS)} events published (${rate(sent / sendS)} batches) over ${rounds} rounds;`);
  console.log(`    publish() took ${((publishMs / (sendS * 1000)) * 100).toFixed(0)}% of the time (the rest: socket writes, I/O turns); dropped by HWM ${dropped}; delivered ${received}/${sent}`);
  Bun.gc(true);
  console.log(`  RSS now ${mb(process.memoryUsage().rss)}`);
} finally {
  for (const p of pubs) p.close();
  for (const rl of relays) rl.close();
}
