// The zeromq.js side of the PUB→SUB benchmark: libzmq through the zeromq.js binding under Node (it
// cannot run in Bun), same workload as kv-workload.ts (vLLM map layout through msgpackr), same
// line protocol and the same pacing as the Bun peer: batches of 256 sends, a yield to the event
// loop after each, and at the HWM a wait for room instead of a drop (noDrop: send fails with
// EAGAIN there, so it waits a turn and retries).
//   node zmq-pubsub-node-peer.mjs pub '{"blocks":1,"durationMs":2000,"hwm":1000}'
//   node zmq-pubsub-node-peer.mjs sub '{"endpoint":"tcp://…","blocks":1}'
import { createInterface } from "node:readline";
import { Packr } from "msgpackr";
import * as zmq from "zeromq";

const WARM_SEQ = 0xffff_ffff_ffff_fffen;
const END_SEQ = 0xffff_ffff_ffff_ffffn;
const TOPIC = Buffer.from("kv@bench");
const BLOCK_SIZE = 16;
const out = (o) => process.stdout.write(JSON.stringify(o) + "\n");
const [role, argJson] = process.argv.slice(2);
const args = JSON.parse(argJson ?? "{}");
const packr = new Packr({ useRecords: false, int64AsType: "bigint", variableMapSize: true });

function workload(blocks) {
  const hashes = Array.from({ length: blocks }, (_, i) => 0xcb38e4d7fb2dca5cn ^ BigInt(i * 0x9e3779b9));
  const tokens = Array.from({ length: blocks * BLOCK_SIZE }, (_, i) => (1000 + i * 7919) % 151_000);
  const event = { type: "BlockStored", block_hashes: hashes, parent_block_hash: 0x44a2b2379d6d3c3dn, token_ids: tokens, block_size: BLOCK_SIZE, lora_id: null, medium: "GPU", lora_name: null };
  const batch = [0, [event], 0];
  return {
    encode(n) {
      batch[0] = 1_760_000_000 + n / 1000;
      hashes[0] = BigInt(n);
      return packr.pack(batch);
    },
    decodeBlocks(payload) {
      const [, events] = packr.unpack(payload);
      return events[0]?.block_hashes.length ?? -1;
    },
  };
}
const seqFrame = (seq) => {
  const b = Buffer.allocUnsafe(8);
  b.writeBigUInt64BE(seq);
  return b;
};
const work = workload(args.blocks);
const cpuMs = (since) => {
  const u = process.cpuUsage(since);
  return (u.user + u.system) / 1000;
};

const yieldToIo = () => new Promise((r) => setImmediate(r));

/** Sends, waiting a turn and retrying while the PUB is at its HWM (noDrop's EAGAIN). */
async function sendWaiting(pub, frames) {
  for (;;) {
    try {
      return await pub.send(frames);
    } catch (err) {
      if (err?.code !== "EAGAIN") throw err;
      await yieldToIo();
    }
  }
}

if (role === "pub") {
  // noDrop: at the HWM send() fails with EAGAIN instead of dropping; sendWaiting retries it.
  const pub = new zmq.Publisher({ sendHighWaterMark: args.hwm, noDrop: true, linger: 1000 });
  await pub.bind("tcp://127.0.0.1:*");
  out({ endpoint: pub.lastEndpoint });
  let phase = "idle";
  let go;
  const started = new Promise((r) => (go = r));
  const rl = createInterface({ input: process.stdin });
  rl.on("line", (l) => {
    if (l.trim() === "warm") phase = "warm";
    if (l.trim() === "go") { phase = "go"; go(); }
  });
  const warmPayload = work.encode(0);
  while (phase !== "go") {
    if (phase === "warm") await sendWaiting(pub, [TOPIC, seqFrame(WARM_SEQ), warmPayload]);
    await Promise.race([started, new Promise((r) => setTimeout(r, 2))]);
  }
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  const deadline = t0 + args.durationMs;
  let n = 0;
  while (performance.now() < deadline) {
    for (let i = 0; i < 256; i++, n++) await sendWaiting(pub, [TOPIC, seqFrame(BigInt(n)), work.encode(n)]);
    await yieldToIo();
  }
  const elapsedMs = performance.now() - t0;
  await sendWaiting(pub, [TOPIC, seqFrame(END_SEQ), Buffer.alloc(0)]);
  out({ done: true, sent: n, elapsedMs, cpuMs: cpuMs(cpu0), dropped: 0, payloadBytes: warmPayload.length });
  rl.on("close", () => { pub.close(); process.exit(0); });
} else if (role === "sub") {
  const sub = new zmq.Subscriber({ receiveHighWaterMark: 10_000, linger: 0 });
  sub.subscribe(TOPIC);
  sub.connect(args.endpoint);
  let warm = false, received = 0, badDecodes = 0, t0 = 0, cpu0 = process.cpuUsage();
  for await (const [, seqBuf, payload] of sub) {
    const seq = seqBuf.readBigUInt64BE(0);
    if (seq === WARM_SEQ) {
      if (!warm) out({ warm: true });
      warm = true;
      continue;
    }
    if (seq === END_SEQ) {
      out({ received, elapsedMs: performance.now() - t0, cpuMs: cpuMs(cpu0), badDecodes });
      break;
    }
    if (received === 0) {
      t0 = performance.now();
      cpu0 = process.cpuUsage();
    }
    received++;
    if (work.decodeBlocks(payload) !== args.blocks) badDecodes++;
  }
  sub.close();
  process.exit(0);
} else {
  throw new Error(`unknown role ${role}`);
}
