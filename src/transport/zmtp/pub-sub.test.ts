import { describe, expect, test } from "bun:test";
import { createLogger } from "../../lib/logger.ts";
import { waitFor, withTimeout } from "../../../test/harness.ts";
import { reconnectDelayMs } from "./dialer.ts";
import { PubSocket } from "./pub-socket.ts";
import { SubSocket } from "./sub-socket.ts";

const logger = createLogger({ level: "error" });
const td = new TextDecoder();
const strs = (m: Uint8Array[]) => m.map((f) => td.decode(f));
const recv = (s: SubSocket, what = "a message") => withTimeout(s.receive(), 5000, what).then(strs);

describe("PUB/SUB between kvcr-mock sockets", () => {
  test("bind reports the actual port", () => {
    using pub = new PubSocket({ logger });
    const ep = pub.bind("tcp://127.0.0.1:0");
    expect(ep).toMatch(/^tcp:\/\/127\.0\.0\.1:\d+$/);
    expect(ep.endsWith(":0")).toBe(false);
    expect(pub.endpoints).toEqual([ep]);
  });

  /** Binds `pub`, subscribes `sub` to "kv@" and connects it, and waits until the PUB has the subscription. */
  async function subscribeKv(pub: PubSocket, sub: SubSocket): Promise<void> {
    const ep = pub.bind("tcp://127.0.0.1:0");
    sub.subscribe("kv@");
    sub.connect(ep);
    await waitFor(() => pub.subscriberCount("kv@") === 1, { timeoutMs: 5000, what: "the subscription" });
  }

  test("a message no subscription's prefix matches is sent to nobody", async () => {
    using pub = new PubSocket({ logger });
    using sub = new SubSocket({ logger });
    await subscribeKv(pub, sub);
    expect(pub.send(["other", "x"])).toBe(0);
  });

  test("a multipart message matching a prefix arrives whole", async () => {
    using pub = new PubSocket({ logger });
    using sub = new SubSocket({ logger });
    await subscribeKv(pub, sub);
    const frames = Array.from({ length: 20 }, (_, i) => `f${i}`);
    expect(pub.send(["kv@w1", ...frames])).toBe(1);
    expect(await recv(sub)).toEqual(["kv@w1", ...frames]);
    expect(pub.stats()).toMatchObject({ peers: 1, messagesSent: 1, messagesDropped: 0 });
  });

  test("connected() resolves on the first handshake and rejects when closed first", async () => {
    using pub = new PubSocket({ logger });
    const ep = pub.bind("tcp://127.0.0.1:0");
    using sub = new SubSocket({ logger });
    const waiting = sub.connected();
    sub.connect(ep);
    await withTimeout(waiting, 5000, "the SUB handshake");
    await sub.connected(); // already connected: resolves at once
    const lonely = new SubSocket({ logger });
    const never = lonely.connected();
    lonely.close();
    await expect(never).rejects.toThrow(/closed/);
  });

  test("SUB binds, PUB connects", async () => {
    using sub = new SubSocket({ logger });
    sub.subscribe("");
    const ep = sub.bind("tcp://127.0.0.1:0");
    using pub = new PubSocket({ logger });
    pub.connect(ep);
    await waitFor(() => pub.subscriberCount() === 1, { timeoutMs: 5000, what: "the bound SUB's subscription" });
    pub.send(["", "hello"]);
    expect(await recv(sub)).toEqual(["", "hello"]);
  });

  test("one SUB, many publishers: fair-queued receive", async () => {
    using sub = new SubSocket({ logger });
    sub.subscribe("");
    const pubs = [new PubSocket({ logger }), new PubSocket({ logger }), new PubSocket({ logger })];
    try {
      for (const p of pubs) sub.connect(p.bind("tcp://127.0.0.1:0"));
      await waitFor(() => pubs.every((p) => p.subscriberCount() === 1), { timeoutMs: 5000, what: "three subscriptions" });
      pubs.forEach((p, i) => {
        for (let k = 0; k < 50; k++) p.send([`p${i}`, String(k)]);
      });
      await waitFor(() => sub.stats().messagesReceived === 150, { timeoutMs: 5000, what: "all 150 messages queued at the SUB" });
      const firstThree = new Set<string>();
      for (let k = 0; k < 3; k++) firstThree.add((await recv(sub))[0]!);
      expect(firstThree).toEqual(new Set(["p0", "p1", "p2"]));
      // Per publisher, order is kept.
      const byTopic = new Map<string, number[]>();
      for (let k = 3; k < 150; k++) {
        const [topic, n] = await recv(sub);
        byTopic.set(topic!, [...(byTopic.get(topic!) ?? []), Number(n)]);
      }
      for (const seqs of byTopic.values()) expect(seqs).toEqual(Array.from({ length: 49 }, (_, i) => i + 1));
    } finally {
      for (const p of pubs) p.close();
    }
  });

  test("subscriptions are reference-counted: unsubscribing stops delivery once the last reference goes", async () => {
    using pub = new PubSocket({ logger });
    const ep = pub.bind("tcp://127.0.0.1:0");
    using sub = new SubSocket({ logger });
    sub.subscribe("a");
    sub.subscribe("a");
    sub.subscribe("b");
    sub.connect(ep);
    await waitFor(() => pub.subscriberCount("a") === 1 && pub.subscriberCount("b") === 1, { timeoutMs: 5000, what: "subscriptions" });
    sub.unsubscribe("a");
    sub.unsubscribe("b");
    await waitFor(() => pub.subscriberCount("b") === 0, { timeoutMs: 5000, what: "the CANCEL" });
    expect(pub.subscriberCount("a")).toBe(1); // one reference to "a" is left
    pub.send(["b", "dropped"]);
    pub.send(["a", "kept"]);
    expect(await recv(sub)).toEqual(["a", "kept"]);
  });

  test("publisher restart on the same port: SUB reconnects and resubscribes", async () => {
    const first = new PubSocket({ logger });
    const ep = first.bind("tcp://127.0.0.1:0");
    using sub = new SubSocket({ logger, reconnectIntervalMs: 10 });
    sub.subscribe("t");
    sub.connect(ep);
    try {
      await waitFor(() => first.subscriberCount("t") === 1, { timeoutMs: 5000, what: "the subscription" });
      first.send(["t", "1"]);
      expect(await recv(sub)).toEqual(["t", "1"]);
    } finally {
      first.close();
    }
    await waitFor(() => sub.peerCount === 0, { timeoutMs: 5000, what: "the SUB to see the publisher go" });
    using second = new PubSocket({ logger });
    second.bind(ep);
    await waitFor(() => second.subscriberCount("t") === 1, { timeoutMs: 5000, what: "the re-sent subscription" });
    second.send(["t", "2"]);
    expect(await recv(sub)).toEqual(["t", "2"]);
  });

  test("slow subscriber: the publisher never blocks, drops past the HWM, its queue stays bounded", async () => {
    using pub = new PubSocket({ logger, sendHighWaterMark: 50 });
    const ep = pub.bind("tcp://127.0.0.1:0");
    // receive() is never called until the end, so the SUB pauses reading after 10 messages.
    using sub = new SubSocket({ logger, receiveHighWaterMark: 10 });
    sub.subscribe("");
    sub.connect(ep);
    await waitFor(() => pub.subscriberCount() === 1, { timeoutMs: 5000, what: "the subscription" });
    const payload = new Uint8Array(4096);
    let maxQueued = 0;
    const accepted: number[] = [];
    for (let round = 0; round < 100; round++) {
      for (let i = 0; i < 200; i++) {
        const n = round * 200 + i;
        if (pub.send([payload.subarray(0, 1), new TextEncoder().encode(String(n)), payload]) === 1) accepted.push(n);
      }
      maxQueued = Math.max(maxQueued, pub.stats().queuedMessages);
      await new Promise((r) => setImmediate(r));
    }
    const stats = pub.stats();
    expect(stats.messagesDropped).toBeGreaterThan(0);
    expect(stats.messagesSent + stats.messagesDropped).toBe(20_000);
    expect(maxQueued).toBeLessThanOrEqual(50);
    // Whatever was accepted arrives, in order, once the subscriber reads again.
    const got: number[] = [];
    while (got.length < accepted.length) got.push(Number((await recv(sub, `message ${got.length + 1}/${accepted.length}`))[1]));
    expect(got).toEqual(accepted);
  });

  test("high-water marks of 0 mean no limit, as in libzmq (nothing dropped, nothing paused)", async () => {
    const n = 5000; // five times the default HWM, sent in one tick
    using pub = new PubSocket({ logger, sendHighWaterMark: 0 });
    const ep = pub.bind("tcp://127.0.0.1:0");
    using sub = new SubSocket({ logger, receiveHighWaterMark: 0 });
    sub.subscribe("");
    sub.connect(ep);
    await waitFor(() => pub.subscriberCount() === 1, { timeoutMs: 5000, what: "the subscription" });
    const body = new Uint8Array(1024); // 5 MB in all: far more than one socket read, so a pause would show
    for (let i = 0; i < n; i++) pub.send(["", String(i), body]);
    expect(pub.stats()).toMatchObject({ messagesSent: n, messagesDropped: 0 });
    // Nobody reads the SUB: with no receive limit every message still lands in its queue.
    await waitFor(() => sub.stats().messagesReceived === n, { timeoutMs: 5000, what: `all ${n} messages queued on the unread SUB (${sub.stats().messagesReceived})` });
    expect((await recv(sub))[1]).toBe("0");
  });

  test("onMessage takes every message in place of a queue, even after a handler that throws", async () => {
    using pub = new PubSocket({ logger });
    const ep = pub.bind("tcp://127.0.0.1:0");
    using sub = new SubSocket({ logger: createLogger({ level: "silent" }) });
    const got: string[] = [];
    sub.onMessage((m) => {
      if (td.decode(m[1]!) === "boom") throw new Error("handler bug");
      got.push(td.decode(m[1]!));
    });
    sub.subscribe("");
    sub.connect(ep);
    await waitFor(() => pub.subscriberCount() === 1, { timeoutMs: 5000, what: "the subscription" });
    pub.send(["", "1"]);
    pub.send(["", "boom"]);
    pub.send(["", "2"]);
    await waitFor(() => got.length === 2, { timeoutMs: 5000, what: "two messages" });
    expect(got).toEqual(["1", "2"]);
    await expect(sub.receive()).rejects.toThrow(/onMessage/);
  });

  test("close ends pending receives and iteration after queued messages are consumed", async () => {
    const sub = new SubSocket({ logger });
    const pending = sub.receive();
    sub.close();
    await expect(pending).rejects.toThrow(/closed/);
    const it = sub[Symbol.asyncIterator]();
    expect((await it.next()).done).toBe(true);
    expect(() => sub.bind("tcp://127.0.0.1:0")).toThrow(/closed/);
  });

  test("bad endpoints and options are refused with a clear message", () => {
    using pub = new PubSocket({ logger });
    expect(() => pub.bind("udp://1.2.3.4:5")).toThrow(/only the tcp:\/\/ transport/);
    expect(() => pub.bind("tcp://127.0.0.1")).toThrow(/missing :PORT/);
    expect(() => pub.connect("tcp://127.0.0.1:0")).toThrow(/cannot connect to port 0/);
    expect(() => pub.connect("tcp://*:5")).toThrow(/only valid for bind/);
    expect(() => pub.bind("tcp://127.0.0.1:70000")).toThrow(/above 65535/);
    const ep = pub.bind("tcp://127.0.0.1:*");
    using other = new PubSocket({ logger });
    const port = ep.split(":").at(-1);
    expect(() => other.bind(ep)).toThrow(`cannot bind ZeroMQ PUB on 127.0.0.1:${port}: port ${port} is in use`);
    // Not a port problem: say that the address is not this machine's.
    expect(() => other.bind("tcp://192.0.2.1:0")).toThrow("cannot bind ZeroMQ PUB on 192.0.2.1:0: 192.0.2.1 is not an address of this machine");
    expect(() => new PubSocket({ sendHighWaterMark: -1 })).toThrow(/sendHighWaterMark=-1/);
    expect(() => pub.unbind("tcp://127.0.0.1:1")).toThrow(/not bound/);
    pub.unbind(ep);
    expect(pub.endpoints).toEqual([]);
  });
});

test("reconnect backoff: 100 ms doubling to 5 s", () => {
  expect(Array.from({ length: 9 }, (_, n) => reconnectDelayMs(n, 100, 5000))).toEqual([100, 200, 400, 800, 1600, 3200, 5000, 5000, 5000]);
  expect(reconnectDelayMs(1000, 100, 5000)).toBe(5000);
});
