// One side of the PUB→SUB benchmark on kvcr-mock's ZMTP sockets, run as its own Bun process.
//   bun zmq-pubsub-bun-peer.ts pub  '{"blocks":1,"durationMs":2000,"hwm":100000,"sample":false}'
//   bun zmq-pubsub-bun-peer.ts sub  '{"endpoint":"tcp://…","blocks":1}'
//   bun zmq-pubsub-bun-peer.ts fanpub '{"count":1000,"blocks":1,"durationMs":2000}'  (N PUB sockets, one process)
//   bun zmq-pubsub-bun-peer.ts fansub  (reads {"endpoints":[…],"blocks":1} from its first stdin line)
// Same line protocol as zmq-pubsub-node-peer.mjs (see zmq-pubsub.ts).
import { createLogger } from "../src/lib/logger.ts";
import { PubSocket, SubSocket } from "../src/transport/zmtp/index.ts";
import { readLines } from "../test/lines.ts";
import { decodeSeqFrame, encodeSeqFrame, kvWorkload, rawWorkload } from "./kv-workload.ts";

const WARM_SEQ = 0xffff_ffff_ffff_fffen;
const END_SEQ = 0xffff_ffff_ffff_ffffn;
const TOPIC = new TextEncoder().encode("kv@bench");
const HWM_FAN = 100_000;
const out = (o: Record<string, unknown>) => process.stdout.write(JSON.stringify(o) + "\n");
const logger = createLogger({ level: "warn", tag: "bench" });
const yieldToIo = () => new Promise<void>((r) => setImmediate(r));

const [role, argJson] = process.argv.slice(2);
const args = JSON.parse(argJson ?? "{}");
const work = args.transportOnly ? rawWorkload(args.blocks) : kvWorkload(args.blocks);

/** Reads stdin lines until it closes (the orchestrator ends the run by closing it or killing us). */
async function stdinLines(onLine: (l: string) => void) {
  for await (const line of readLines(Bun.stdin.stream())) onLine(line.trim());
}
const cpuMs = (since: NodeJS.CpuUsage) => {
  const u = process.cpuUsage(since);
  return (u.user + u.system) / 1000;
};

/**
 * A subscriber's count: the clock and CPU meter start at the first batch (not at connect, so the
 * slow-joiner wait is not counted); every payload must decode to the expected number of blocks.
 */
function receiveCounter() {
  let received = 0;
  let badDecodes = 0;
  let t0 = 0;
  let cpu0 = process.cpuUsage();
  return {
    batch(payload: Uint8Array) {
      if (received === 0) {
        t0 = performance.now();
        cpu0 = process.cpuUsage();
      }
      received++;
      if (work.decodeBlocks(payload) !== args.blocks) badDecodes++;
    },
    result: () => ({ received, elapsedMs: performance.now() - t0, cpuMs: cpuMs(cpu0), badDecodes }),
  };
}

if (role === "pub") {
  const hwm: number = args.hwm;
  const pub = new PubSocket({ logger, sendHighWaterMark: hwm });
  out({ endpoint: pub.bind("tcp://127.0.0.1:0") });
  let phase = "idle" as "idle" | "warm" | "go";
  let resolveStarted: () => void = () => {};
  const started = new Promise<void>((resolve) => (resolveStarted = resolve));
  const stdinClosed = stdinLines((l) => {
    if (l === "warm") phase = "warm";
    if (l === "go") {
      phase = "go";
      resolveStarted();
    }
  });
  // Slow joiner: publish warm-up messages until the orchestrator says the SUB has one.
  const warmPayload = work.encode(0);
  while (phase !== "go") {
    if (phase === "warm") pub.send([TOPIC, encodeSeqFrame(WARM_SEQ), warmPayload]);
    await Promise.race([started, new Promise((r) => setTimeout(r, 2))]);
  }
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  const deadline = t0 + args.durationMs;
  let n = 0;
  let nextSample = t0 + 250;
  let lastSampleN = 0;
  let lastSampleT = t0;
  let maxQueued = 0;
  while (performance.now() < deadline) {
    // Throughput mode paces like the other peers: at the HWM, wait for room instead of dropping
    // (libzmq's noDrop). The slow-subscriber run does not wait: it shows what dropping costs.
    if (!args.sample) while (pub.stats().queuedMessages > hwm - 256) await yieldToIo();
    for (let i = 0; i < 256; i++, n++) pub.send([TOPIC, encodeSeqFrame(BigInt(n)), work.encode(n)]);
    maxQueued = Math.max(maxQueued, pub.stats().queuedMessages);
    await yieldToIo();
    const now = performance.now();
    if (args.sample && now >= nextSample) {
      const mem = process.memoryUsage();
      const s = pub.stats();
      out({ sample: { tMs: Math.round(now - t0), sendsPerSec: Math.round(((n - lastSampleN) * 1000) / (now - lastSampleT)), dropped: s.messagesDropped, queued: s.queuedMessages, rssMB: +(mem.rss / 1e6).toFixed(1), heapMB: +(mem.heapUsed / 1e6).toFixed(1), buffersMB: +(mem.arrayBuffers / 1e6).toFixed(1), externalMB: +(mem.external / 1e6).toFixed(1) } });
      lastSampleN = n;
      lastSampleT = now;
      nextSample = now + 250;
    }
  }
  const elapsedMs = performance.now() - t0;
  pub.send([TOPIC, encodeSeqFrame(END_SEQ), new Uint8Array(0)]);
  while (pub.stats().queuedMessages > 0 && !args.sample) await yieldToIo();
  const s = pub.stats();
  out({ done: true, sent: n, elapsedMs, cpuMs: cpuMs(cpu0), dropped: s.messagesDropped, maxQueued, payloadBytes: warmPayload.length });
  // Stay up until the orchestrator closes stdin, so queued bytes are not cut off.
  await stdinClosed;
  pub.close();
} else if (role === "sub") {
  const sub = new SubSocket({ logger, receiveHighWaterMark: 10_000 });
  sub.subscribe(TOPIC);
  let warm = false;
  const count = receiveCounter();
  sub.onMessage((frames) => {
    const seq = decodeSeqFrame(frames[1]!);
    if (seq === WARM_SEQ) {
      if (!warm) out({ warm: true });
      warm = true;
      return;
    }
    if (seq === END_SEQ) {
      out(count.result());
      sub.close();
      return;
    }
    count.batch(frames[2]!);
  });
  sub.connect(args.endpoint);
} else if (role === "fanpub") {
  // The mocker's shape: many PUB sockets in one process, each publishing one batch per tick.
  const pubs = Array.from({ length: args.count as number }, () => new PubSocket({ logger, sendHighWaterMark: HWM_FAN }));
  out({ endpoints: pubs.map((p) => p.bind("tcp://127.0.0.1:0")) });
  while (pubs.some((p) => p.subscriberCount(TOPIC) === 0)) await new Promise((r) => setTimeout(r, 5));
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  let n = 0;
  while (performance.now() - t0 < args.durationMs) {
    for (const p of pubs) {
      p.send([TOPIC, encodeSeqFrame(BigInt(n)), work.encode(n)]);
      n++;
    }
    // One tick per round; pace to the subscriber so nothing is dropped.
    do await yieldToIo();
    while (pubs.some((p) => p.stats().queuedMessages > 0));
  }
  const elapsedMs = performance.now() - t0;
  for (const p of pubs) p.send([TOPIC, encodeSeqFrame(END_SEQ), new Uint8Array(0)]);
  out({ done: true, sent: n, elapsedMs, cpuMs: cpuMs(cpu0) });
  await stdinLines(() => {});
  for (const p of pubs) p.close();
} else if (role === "fansub") {
  let started = false;
  await stdinLines((line) => {
    if (started || !line) return;
    started = true;
    const { endpoints } = JSON.parse(line) as { endpoints: string[] };
    const sub = new SubSocket({ logger });
    sub.subscribe(TOPIC);
    let ends = 0;
    const count = receiveCounter();
    sub.onMessage((frames) => {
      if (decodeSeqFrame(frames[1]!) === END_SEQ) {
        if (++ends === endpoints.length) {
          out(count.result());
          sub.close();
          process.exit(0);
        }
        return;
      }
      count.batch(frames[2]!);
    });
    for (const ep of endpoints) sub.connect(ep);
  });
} else {
  throw new Error(`unknown role ${role}; expected pub, sub, fanpub or fansub`);
}
