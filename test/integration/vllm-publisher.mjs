// An independent vLLM-style KV-event publisher for the agent tests: real libzmq (`zeromq`) and
// msgpack from `@msgpack/msgpack` (not kvcr-mock's codec), the way vLLM's ZmqEventPublisher sends:
// XPUB (so the test knows a subscriber is there) with frames [topic, seq u64 BE, payload], and an
// optional replay ROUTER answering [identity, "", start] with [identity, "", topic, seq, payload]…
// then [identity, "", "", 0xFF×8, ""] (or vLLM's older layout without the topic frame).
// Runs under Node only. stdin: one JSON command per line {req, op, ...}; stdout: {req, ok, ...}.
//   open    {id, topic, replay: bool, layout: "current"|"old"}   → {pub, replay?}
//   waitSub {id}                                                 resolves once a subscription arrived
//   waitReplay {id, count}                                       resolves once `count` replay requests were answered
//   publish {id, batch: {ts?, events, dp_rank?}, encoding: "map"|"array", skipLive?: bool}
//   raw     {id, frames: [b64…]} / oversized {id, size}           garbage and a too-large payload
//   restart {id}                                                 seq back to 0, replay buffer emptied (a restarted vLLM)
// Hashes in events are {u: "decimal"} (unsigned), {i: "-decimal"} (signed) or {b: "hex"} (bytes).
import { encode } from "@msgpack/msgpack";
import * as zmq from "zeromq";
import { out, serveCommands } from "./stdio-commands.mjs";

const pubs = new Map();

function hash(h) {
  if (h === null || h === undefined) return null;
  if (h.u !== undefined) return BigInt(h.u);
  if (h.i !== undefined) return BigInt(h.i);
  if (h.b !== undefined) return Buffer.from(h.b, "hex");
  throw new Error(`bad hash ${JSON.stringify(h)}`);
}

function event(e, encoding) {
  if (e.type === "AllBlocksCleared") return encoding === "map" ? { type: e.type } : [e.type];
  const hashes = e.block_hashes.map(hash);
  if (e.type === "BlockStored") {
    if (encoding === "array") {
      const a = [e.type, hashes, hash(e.parent_block_hash), e.token_ids, e.block_size, null, e.medium ?? null, null];
      if (e.ownership !== undefined) a.push(null, null, null, null, null, e.ownership);
      return a;
    }
    const m = { type: e.type, block_hashes: hashes, parent_block_hash: hash(e.parent_block_hash), token_ids: e.token_ids, block_size: e.block_size, lora_id: null, medium: e.medium ?? null, lora_name: null };
    if (e.ownership !== undefined) m.ownership = e.ownership;
    return m;
  }
  if (encoding === "array") {
    const a = [e.type, hashes, e.medium ?? null];
    if (e.ownership !== undefined) a.push(null, null, e.ownership);
    return a;
  }
  const m = { type: e.type, block_hashes: hashes, medium: e.medium ?? null };
  if (e.ownership !== undefined) m.ownership = e.ownership;
  return m;
}

function seqFrame(seq) {
  const b = Buffer.alloc(8);
  b.writeBigUInt64BE(BigInt(seq));
  return b;
}

async function serveReplay(p) {
  for await (const [identity, , start] of p.router) {
    const from = Number(start.readBigUInt64BE(0));
    for (const [seq, payload] of p.buffer) {
      if (seq < from) continue;
      await p.router.send(p.layout === "old" ? [identity, "", seqFrame(seq), payload] : [identity, "", p.topic, seqFrame(seq), payload]);
    }
    const end = Buffer.alloc(8, 0xff);
    await p.router.send(p.layout === "old" ? [identity, "", end, ""] : [identity, "", "", end, ""]);
    p.replays++;
    for (const w of p.replayWaiters.splice(0)) w();
  }
}

async function watchSubs(p) {
  for await (const [msg] of p.pub) if (msg[0] === 1) { p.subscribed = true; for (const w of p.waiters.splice(0)) w(); }
}

async function handle(c) {
  switch (c.op) {
    case "open": {
      const pub = new zmq.XPublisher({ linger: 0 });
      await pub.bind("tcp://127.0.0.1:*");
      const p = { pub, topic: Buffer.from(c.topic ?? "", "utf8"), seq: 0, buffer: [], layout: c.layout ?? "current", subscribed: false, waiters: [], replays: 0, replayWaiters: [] };
      void watchSubs(p).catch(() => {});
      const r = { pub: pub.lastEndpoint };
      if (c.replay) {
        p.router = new zmq.Router({ linger: 0 });
        await p.router.bind("tcp://127.0.0.1:*");
        r.replay = p.router.lastEndpoint;
        void serveReplay(p).catch(() => {});
      }
      pubs.set(c.id, p);
      return r;
    }
    case "waitSub": {
      const p = pubs.get(c.id);
      if (!p.subscribed) await new Promise((r) => p.waiters.push(r));
      return {};
    }
    case "waitReplay": {
      const p = pubs.get(c.id);
      while (p.replays < c.count) await new Promise((r) => p.replayWaiters.push(r));
      return {};
    }
    case "publish": {
      const p = pubs.get(c.id);
      const b = c.batch;
      const events = b.events.map((e) => event(e, c.encoding ?? "map"));
      const batch = b.dp_rank === undefined ? [b.ts ?? Date.now() / 1000, events] : [b.ts ?? Date.now() / 1000, events, b.dp_rank];
      const payload = Buffer.from(encode(batch, { useBigInt64: true, forceFloat32: false }));
      const seq = p.seq++;
      p.buffer.push([seq, payload]);
      if (!c.skipLive) await p.pub.send([p.topic, seqFrame(seq), payload]);
      return { seq };
    }
    case "raw": {
      const p = pubs.get(c.id);
      await p.pub.send(c.frames.map((f) => Buffer.from(f, "base64")));
      return {};
    }
    case "restart": {
      const p = pubs.get(c.id);
      p.seq = 0;
      p.buffer = [];
      return {};
    }
    case "oversized": {
      const p = pubs.get(c.id);
      const seq = p.seq++;
      await p.pub.send([p.topic, seqFrame(seq), Buffer.alloc(c.size, 0x90)]);
      return { seq };
    }
    default:
      throw new Error(`unknown op ${c.op}`);
  }
}

serveCommands(handle);
out({ event: "ready" });
