// Interop with real libzmq (zeromq.js under Node, spawned): kvcr-mock's ZMTP sockets on one side,
// libzmq on the other, in both directions, bind and connect both ways, for PUB/SUB/ROUTER/DEALER.
import { describe, expect, test } from "bun:test";
import { DealerSocket, PubSocket, RouterSocket, SubSocket } from "../../src/transport/zmtp/index.ts";
import type { ZmtpSocket } from "../../src/transport/zmtp/index.ts";
import { createLogger } from "../../src/lib/logger.ts";
import { cleanupList, heldPort, waitFor, withTimeout } from "../harness.ts";
import { patternBytes, reportOf, text, ZmqPeer, type FrameReport } from "./zmq-peer-client.ts";

const logger = createLogger({ level: "error", tag: "zmtp-test" });
const te = new TextEncoder();
const td = new TextDecoder();
const b = (s: string) => te.encode(s);
const asText = (m: FrameReport[]) => m.map((f) => ("b64" in f ? Buffer.from(f.b64, "base64").toString() : `<${f.size}>`));
const strs = (m: Uint8Array[]) => m.map((f) => td.decode(f));

// Everything a test opens is registered here and closed after it, also when it fails.
const cleanups = cleanupList();
async function peer(): Promise<ZmqPeer> {
  const p = await ZmqPeer.start();
  cleanups.push(() => p.kill());
  return p;
}
function own<T extends ZmtpSocket>(s: T): T {
  cleanups.push(() => s.close());
  return s;
}
/**
 * A port for "connect before bind" cases, held (connections accepted and closed at once, so the
 * connecting side keeps retrying) until the test releases it right before binding it for real.
 */
function reservePort(): ReturnType<typeof heldPort> {
  const held = heldPort();
  cleanups.push(() => held.close());
  return held;
}

/** libzmq PUB → our SUB: publish a warm-up message until every SUB has one, then stop. */
async function warmUp(p: ZmqPeer, pubId: string, subs: SubSocket[], topic: string): Promise<void> {
  const seen = subs.map(() => false);
  const done = Promise.all(subs.map(async (s, i) => {
    for (;;) {
      const m = await s.receive();
      if (td.decode(m[1]!) === "warm") {
        seen[i] = true;
        return;
      }
    }
  }));
  await p.pump(pubId, [text(topic), text("warm"), text("")]);
  await withTimeout(done, 10_000, "the first warm-up message on every SUB (slow joiner)");
  await p.stopPump(pubId);
}

/** Next non-warm-up message. */
async function nextReal(s: SubSocket): Promise<string[]> {
  for (;;) {
    const m = strs(await withTimeout(s.receive(), 10_000, "a message on our SUB"));
    if (m[1] !== "warm") return m;
  }
}

describe("libzmq PUB → kvcr-mock SUB", () => {
  test("topic filtering and 3-frame messages, empty topic frame included (SUB connects after bind)", async () => {
    const p = await peer();
    await p.socket("pub", "pub");
    const ep = await p.bind("pub");
    const only = own(new SubSocket({ logger }));
    const all = own(new SubSocket({ logger }));
    only.subscribe("kv@1");
    all.subscribe("");
    only.connect(ep);
    all.connect(ep);
    await warmUp(p, "pub", [only, all], "kv@1");
    await p.send("pub", [text("kv@2"), text("seq-1"), text("payload-2")]);
    await p.send("pub", [text(""), text("seq-2"), text("payload-empty-topic")]);
    await p.send("pub", [text("kv@1"), text("seq-3"), text("payload-1")]);
    expect(await nextReal(all)).toEqual(["kv@2", "seq-1", "payload-2"]);
    expect(await nextReal(all)).toEqual(["", "seq-2", "payload-empty-topic"]);
    expect(await nextReal(all)).toEqual(["kv@1", "seq-3", "payload-1"]);
    // The filtered SUB sees only its topic: the next real message after warm-up is seq-3.
    expect(await nextReal(only)).toEqual(["kv@1", "seq-3", "payload-1"]);
  });

  test("SUB connects before the PUB binds, then receives", async () => {
    const held = reservePort();
    const sub = own(new SubSocket({ logger, reconnectIntervalMs: 20 }));
    sub.subscribe("t");
    sub.connect(`tcp://127.0.0.1:${held.port}`);
    const p = await peer();
    await p.socket("pub", "pub");
    held.close();
    await p.bind("pub", `tcp://127.0.0.1:${held.port}`);
    await warmUp(p, "pub", [sub], "t");
    await p.send("pub", [text("t"), text("after"), text("x")]);
    expect(await nextReal(sub)).toEqual(["t", "after", "x"]);
  });

  test("libzmq PUB connects to a bound kvcr-mock SUB", async () => {
    const sub = own(new SubSocket({ logger }));
    sub.subscribe("");
    const ep = sub.bind("tcp://127.0.0.1:0");
    const p = await peer();
    await p.socket("pub", "pub");
    await p.connect("pub", ep);
    await warmUp(p, "pub", [sub], "z");
    await p.send("pub", [text("z"), text("1"), text("")]);
    expect(await nextReal(sub)).toEqual(["z", "1", ""]);
  });

  test("publisher restart: SUB reconnects, resubscribes and receives again", async () => {
    const held = reservePort();
    const ep = `tcp://127.0.0.1:${held.port}`;
    const sub = own(new SubSocket({ logger, reconnectIntervalMs: 20 }));
    sub.subscribe("kv");
    sub.connect(ep);
    const first = await peer();
    await first.socket("pub", "pub");
    held.close();
    await first.bind("pub", ep);
    await warmUp(first, "pub", [sub], "kv");
    await first.send("pub", [text("kv"), text("before"), text("")]);
    expect(await nextReal(sub)).toEqual(["kv", "before", ""]);
    await first.kill();
    await waitFor(() => sub.peerCount === 0, { timeoutMs: 10_000, what: "our SUB to notice the publisher went away" });
    const second = await peer();
    await second.socket("pub", "pub");
    await second.bind("pub", ep);
    // libzmq filters on the publisher: anything arriving proves the subscription was re-sent.
    await warmUp(second, "pub", [sub], "kv");
    await second.send("pub", [text("kv"), text("after"), text("")]);
    expect(await nextReal(sub)).toEqual(["kv", "after", ""]);
  });

  test("8 MiB message", async () => {
    const p = await peer();
    await p.socket("pub", "pub");
    const ep = await p.bind("pub");
    const sub = own(new SubSocket({ logger }));
    sub.subscribe("big");
    sub.connect(ep);
    await warmUp(p, "pub", [sub], "big");
    await p.request("send", { id: "pub", frames: [text("big"), text("1"), { pattern: { size: 8 << 20, seed: 7 } }] }, 30_000);
    for (;;) {
      const m = await withTimeout(sub.receive(), 30_000, "the 8 MiB message");
      if (td.decode(m[1]!) === "warm") continue;
      expect(m.map(reportOf)).toEqual([reportOf(b("big")), reportOf(b("1")), reportOf(patternBytes(8 << 20, 7))]);
      break;
    }
  }, 60_000);
});

describe("kvcr-mock PUB → libzmq SUB", () => {
  test("topic filtering and 3-frame messages, empty topic frame included", async () => {
    const pub = own(new PubSocket({ logger }));
    const ep = pub.bind("tcp://127.0.0.1:0");
    const p = await peer();
    await p.socket("only", "sub");
    await p.subscribe("only", text("kv@1"));
    await p.connect("only", ep);
    await p.socket("all", "sub");
    await p.subscribe("all", text(""));
    await p.connect("all", ep);
    // Our PUB sees the subscriptions arrive: no slow-joiner guessing needed.
    await waitFor(() => pub.subscriberCount("kv@1") === 2 && pub.subscriberCount("x") === 1, { timeoutMs: 10_000, what: "both libzmq subscriptions" });
    expect(pub.send(["kv@2", "seq-1", "payload-2"])).toBe(1);
    expect(pub.send([new Uint8Array(0), b("seq-2"), b("payload-empty-topic")])).toBe(1);
    expect(pub.send(["kv@1", "seq-3", "payload-1"])).toBe(2);
    expect(asText(await p.nextMessage("all"))).toEqual(["kv@2", "seq-1", "payload-2"]);
    expect(asText(await p.nextMessage("all"))).toEqual(["", "seq-2", "payload-empty-topic"]);
    expect(asText(await p.nextMessage("all"))).toEqual(["kv@1", "seq-3", "payload-1"]);
    expect(asText(await p.nextMessage("only"))).toEqual(["kv@1", "seq-3", "payload-1"]);
  });

  test("libzmq SUB connects before our PUB binds", async () => {
    const held = reservePort();
    const p = await peer();
    await p.socket("sub", "sub", { reconnectInterval: 20 });
    await p.subscribe("sub", text("t"));
    await p.connect("sub", `tcp://127.0.0.1:${held.port}`);
    const pub = own(new PubSocket({ logger }));
    held.close();
    pub.bind(`tcp://127.0.0.1:${held.port}`);
    await waitFor(() => pub.subscriberCount("t") === 1, { timeoutMs: 10_000, what: "the libzmq SUB to connect and subscribe" });
    pub.send(["t", "1", "x"]);
    expect(asText(await p.nextMessage("sub"))).toEqual(["t", "1", "x"]);
  });

  test("our PUB connects to a bound libzmq SUB", async () => {
    const p = await peer();
    await p.socket("sub", "sub");
    await p.subscribe("sub", text(""));
    const ep = await p.bind("sub");
    const pub = own(new PubSocket({ logger }));
    pub.connect(ep);
    await waitFor(() => pub.subscriberCount("q") === 1, { timeoutMs: 10_000, what: "the bound libzmq SUB's subscription" });
    pub.send(["q", "1", ""]);
    expect(asText(await p.nextMessage("sub"))).toEqual(["q", "1", ""]);
  });

  test("publisher restart: libzmq SUB reconnects and receives from the new PUB", async () => {
    const first = new PubSocket({ logger });
    cleanups.push(() => first.close());
    const ep = first.bind("tcp://127.0.0.1:0");
    const p = await peer();
    await p.socket("sub", "sub", { reconnectInterval: 20 });
    await p.subscribe("sub", text("kv"));
    await p.connect("sub", ep);
    await waitFor(() => first.subscriberCount("kv") === 1, { timeoutMs: 10_000, what: "the libzmq subscription" });
    first.send(["kv", "before", ""]);
    expect(asText(await p.nextMessage("sub"))).toEqual(["kv", "before", ""]);
    first.close();
    const second = own(new PubSocket({ logger }));
    second.bind(ep);
    await waitFor(() => second.subscriberCount("kv") === 1, { timeoutMs: 10_000, what: "libzmq to reconnect and resubscribe" });
    second.send(["kv", "after", ""]);
    expect(asText(await p.nextMessage("sub"))).toEqual(["kv", "after", ""]);
  });

  test("8 MiB message", async () => {
    const pub = own(new PubSocket({ logger }));
    const ep = pub.bind("tcp://127.0.0.1:0");
    const p = await peer();
    await p.socket("sub", "sub");
    await p.subscribe("sub", text("big"));
    await p.connect("sub", ep);
    await waitFor(() => pub.subscriberCount("big") === 1, { timeoutMs: 10_000, what: "the libzmq subscription" });
    const payload = patternBytes(8 << 20, 3);
    pub.send([b("big"), b("1"), payload]);
    expect(await p.nextMessage("sub", 30_000)).toEqual([reportOf(b("big")), reportOf(b("1")), reportOf(payload)]);
  }, 60_000);
});

describe("ROUTER ↔ DEALER with libzmq", () => {
  async function serveReplies(router: RouterSocket, count: number): Promise<void> {
    for (let i = 0; i < count; i++) {
      const [id, delimiter, body] = await withTimeout(router.receive(), 10_000, "a request on our ROUTER");
      expect(delimiter!.length).toBe(0);
      expect(router.send([id!, new Uint8Array(0), b(`reply-to-${td.decode(body!)}`)])).toBe(true);
    }
  }

  test("libzmq DEALERs (named and anonymous) → our bound ROUTER: identity prepended, replies routed", async () => {
    const router = own(new RouterSocket({ logger }));
    const ep = router.bind("tcp://127.0.0.1:0");
    const p = await peer();
    await p.socket("named", "dealer", { routingId: "dealer-1" });
    await p.connect("named", ep);
    await p.socket("anon", "dealer");
    await p.connect("anon", ep);
    const served = serveReplies(router, 4);
    for (const i of [1, 2]) {
      await p.send("named", [text(""), text(`n${i}`)]);
      await p.send("anon", [text(""), text(`a${i}`)]);
    }
    await served;
    const named = [await p.nextMessage("named"), await p.nextMessage("named")].map(asText);
    const anon = [await p.nextMessage("anon"), await p.nextMessage("anon")].map(asText);
    expect(named).toEqual([["", "reply-to-n1"], ["", "reply-to-n2"]]);
    expect(anon).toEqual([["", "reply-to-a1"], ["", "reply-to-a2"]]);
    const ids = router.peerIdentities().map((id) => Buffer.from(id).toString("hex"));
    expect(ids).toContain(Buffer.from("dealer-1").toString("hex"));
    // The anonymous peer got a generated 5-byte identity starting with 0x00, as libzmq does.
    expect(ids.some((h) => h.length === 10 && h.startsWith("00"))).toBe(true);
  });

  test("our DEALER → bound libzmq ROUTER, and messages sent before the connection wait for it", async () => {
    const p = await peer();
    await p.socket("router", "router");
    const ep = await p.bind("router");
    const dealer = own(new DealerSocket({ logger, identity: "kv-dealer" }));
    dealer.connect(ep);
    expect(dealer.send(["", "early"])).toBe(true); // queued until the handshake completes
    const req = asText(await p.nextMessage("router"));
    expect(req).toEqual(["kv-dealer", "", "early"]);
    await p.send("router", [text("kv-dealer"), text(""), text("reply")]);
    expect(strs(await withTimeout(dealer.receive(), 10_000, "the reply"))).toEqual(["", "reply"]);
  });

  test("bind and connect work reversed, our ROUTER dialling a libzmq DEALER and our DEALER bound for a libzmq ROUTER", async () => {
    const p = await peer();
    await p.socket("dealer", "dealer", { routingId: "d" });
    const dealerEp = await p.bind("dealer");
    const router = own(new RouterSocket({ logger }));
    router.connect(dealerEp);
    await waitFor(() => router.peerCount === 1, { timeoutMs: 10_000, what: "our ROUTER to connect" });
    await p.send("dealer", [text(""), text("x")]);
    const served = serveReplies(router, 1);
    await served;
    expect(asText(await p.nextMessage("dealer"))).toEqual(["", "reply-to-x"]);

    const dealer = own(new DealerSocket({ logger, identity: "ours" }));
    const ourEp = dealer.bind("tcp://127.0.0.1:0");
    await p.socket("router", "router");
    await p.connect("router", ourEp);
    await waitFor(() => dealer.peerCount === 1, { timeoutMs: 10_000, what: "the libzmq ROUTER to connect" });
    dealer.send(["", "hello"]);
    expect(asText(await p.nextMessage("router"))).toEqual(["ours", "", "hello"]);
    await p.send("router", [text("ours"), text(""), text("back")]);
    expect(strs(await withTimeout(dealer.receive(), 10_000, "the reply"))).toEqual(["", "back"]);
  });

  test("8 MiB request and reply both ways", async () => {
    const router = own(new RouterSocket({ logger }));
    const ep = router.bind("tcp://127.0.0.1:0");
    const p = await peer();
    await p.socket("dealer", "dealer", { routingId: "big" });
    await p.connect("dealer", ep);
    await p.request("send", { id: "dealer", frames: [text(""), { pattern: { size: 8 << 20, seed: 1 } }] }, 30_000);
    const [id, , body] = await withTimeout(router.receive(), 30_000, "the 8 MiB request");
    expect(reportOf(body!)).toEqual(reportOf(patternBytes(8 << 20, 1)));
    const reply = patternBytes(8 << 20, 2);
    router.send([id!, new Uint8Array(0), reply]);
    expect(await p.nextMessage("dealer", 30_000)).toEqual([reportOf(new Uint8Array(0)), reportOf(reply)]);
  }, 60_000);
});

test("the reference peer is real libzmq 4.x", async () => {
  const p = await peer();
  expect(p.libzmqVersion).toMatch(/^4\.\d+\.\d+$/);
});
