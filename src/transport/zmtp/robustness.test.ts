// Hostile and odd peers over raw TCP: each is dropped with a logged reason, nothing throws, and
// well-behaved peers on the same socket keep working. Also the ZMTP 3.0 subscription form and PING.
import { describe, expect, test } from "bun:test";
import type { Socket } from "bun";
import { createConsola } from "consola";
import type { Logger } from "../../lib/logger.ts";
import { waitFor, withTimeout } from "../../../test/harness.ts";
import { concat, encodeCommand, encodeGreeting, encodeMessage, encodePing, encodeReady, encodeSubscriptionMessage } from "../../protocol/zmtp/encoder.ts";
import { ZmtpParser } from "../../protocol/zmtp/parser.ts";
import type { ZmtpCommand } from "../../protocol/zmtp/commands.ts";
import { PubSocket } from "./pub-socket.ts";
import { SubSocket } from "./sub-socket.ts";

const te = new TextEncoder();
const td = new TextDecoder();
const b = (s: string) => te.encode(s);

function capturingLogger(): { logger: Logger; lines: string[] } {
  const lines: string[] = [];
  const logger = createConsola({ level: 4, reporters: [{ log: (o) => lines.push(`${o.type}: ${o.args.join(" ")}`) }] });
  return { logger, lines };
}

/** A raw TCP client that records what it receives (parsed as ZMTP) and when it is closed. */
async function rawPeer(endpoint: string) {
  const port = Number(endpoint.split(":").at(-1));
  const messages: string[][] = [];
  const commands: ZmtpCommand[] = [];
  const parser = new ZmtpParser({ greeting() {}, command: (c) => commands.push(structuredClone(c)), message: (m) => messages.push(m.map((f) => td.decode(f))) });
  let closed = false;
  const socket: Socket<undefined> = await Bun.connect({
    hostname: "127.0.0.1",
    port,
    socket: { data: (_s, d) => void parser.feed(d), close: () => void (closed = true) },
  });
  return {
    write: (bytes: Uint8Array | string) => socket.write(bytes),
    isClosed: () => closed,
    messages,
    commands,
    end: () => socket.end(),
  };
}

/** A PUB with one healthy SUB attached, to show other peers are unaffected. */
async function pubWithHealthySub(opts: { maxMessageBytes?: number; handshakeTimeoutMs?: number } = {}) {
  const { logger, lines } = capturingLogger();
  const pub = new PubSocket({ logger, ...opts });
  const ep = pub.bind("tcp://127.0.0.1:0");
  const sub = new SubSocket({ logger });
  sub.subscribe("");
  sub.connect(ep);
  await waitFor(() => pub.subscriberCount() === 1, { timeoutMs: 5000, what: "the healthy subscriber" });
  const healthyStillWorks = async () => {
    pub.send(["", "still-alive"]);
    const m = await withTimeout(sub.receive(), 5000, "a message on the healthy SUB");
    expect(td.decode(m[1]!)).toBe("still-alive");
  };
  return {
    pub, ep, lines, healthyStillWorks,
    [Symbol.dispose]() {
      sub.close();
      pub.close();
    },
  };
}

describe("a bad peer is disconnected with a logged reason, the others unaffected", () => {
  const cases: { name: string; bytes: () => Uint8Array | string; reason: RegExp; opts?: { maxMessageBytes?: number } }[] = [
    { name: "HTTP garbage", bytes: () => "GET / HTTP/1.1\r\nHost: x\r\n\r\n", reason: /not speaking ZMTP/ },
    { name: "random bytes after a valid signature", bytes: () => concat([encodeGreeting().subarray(0, 10), new Uint8Array([0x01, 0x02])]), reason: /unsupported ZMTP version 1\.x/ },
    { name: "PLAIN mechanism", bytes: () => encodeGreeting({ mechanism: "PLAIN" }), reason: /unsupported security mechanism "PLAIN"/ },
    {
      name: "oversized frame",
      bytes: () => concat([encodeGreeting(), encodeReady("SUB"), encodeMessage([new Uint8Array(5000)])]),
      reason: /5000 bytes exceeds maxMessageBytes/,
      opts: { maxMessageBytes: 1024 },
    },
    { name: "incompatible socket type", bytes: () => concat([encodeGreeting(), encodeReady("PUB")]), reason: /peer socket type PUB cannot talk to PUB/ },
    { name: "message before READY", bytes: () => concat([encodeGreeting(), encodeMessage([b("x")])]), reason: /before the handshake finished/ },
    { name: "peer sends ERROR", bytes: () => concat([encodeGreeting(), encodeCommand("ERROR", new Uint8Array([3, 0x62, 0x61, 0x64]))]), reason: /peer sent ERROR "bad"/ },
  ];
  for (const c of cases) {
    test(c.name, async () => {
      using env = await pubWithHealthySub(c.opts);
      const raw = await rawPeer(env.ep);
      try {
        raw.write(c.bytes());
        await waitFor(raw.isClosed, { timeoutMs: 5000, what: "the bad peer to be disconnected" });
        expect(env.lines.join("\n")).toMatch(c.reason);
        expect(env.pub.stats().peerErrors).toBe(1);
        await env.healthyStillWorks();
      } finally {
        raw.end();
      }
    });
  }

  test("an incompatible peer is told why with an ERROR command before the close", async () => {
    using env = await pubWithHealthySub();
    const raw = await rawPeer(env.ep);
    raw.write(concat([encodeGreeting(), encodeReady("ROUTER")]));
    await waitFor(raw.isClosed, { timeoutMs: 5000, what: "the close" });
    expect(raw.commands.at(-1)).toEqual({ kind: "error", reason: "peer socket type ROUTER cannot talk to PUB" });
  });

  test("a peer that never finishes the handshake is dropped after handshakeTimeoutMs", async () => {
    using env = await pubWithHealthySub({ handshakeTimeoutMs: 50 });
    const raw = await rawPeer(env.ep);
    raw.write(encodeGreeting().subarray(0, 20));
    await waitFor(raw.isClosed, { timeoutMs: 5000, what: "the handshake timeout" });
    expect(env.lines.join("\n")).toMatch(/no ZMTP handshake within 50 ms/);
    await env.healthyStillWorks();
  });

  test("a peer closing mid-frame is just a disconnect", async () => {
    using env = await pubWithHealthySub();
    const raw = await rawPeer(env.ep);
    raw.write(concat([encodeGreeting(), encodeReady("SUB"), encodeSubscriptionMessage(b(""), true)]));
    await waitFor(() => env.pub.subscriberCount() === 2, { timeoutMs: 5000, what: "the raw subscriber" });
    raw.write(new Uint8Array([0x00, 0x80, 0, 1, 2])); // a 128-byte frame cut after 3 bytes
    raw.end();
    await waitFor(() => env.pub.peerCount === 1, { timeoutMs: 5000, what: "the raw peer to be gone" });
    expect(env.pub.stats().peerErrors).toBe(0);
    await env.healthyStillWorks();
  });
});

describe("ZMTP 3.0 peers and heartbeats", () => {
  test("PUB accepts message-form subscribe/cancel from a ZMTP 3.0 SUB", async () => {
    using pub = new PubSocket();
    const ep = pub.bind("tcp://127.0.0.1:0");
    const raw = await rawPeer(ep);
    try {
      raw.write(concat([encodeGreeting({ minor: 0 }), encodeReady("SUB"), encodeSubscriptionMessage(b("kv"), true)]));
      await waitFor(() => pub.subscriberCount("kv1") === 1, { timeoutMs: 5000, what: "the message-form subscription" });
      pub.send(["kv1", "x"]);
      pub.send(["zz", "filtered"]);
      await waitFor(() => raw.messages.length === 1, { timeoutMs: 5000, what: "the published message" });
      expect(raw.messages[0]).toEqual(["kv1", "x"]);
      raw.write(encodeSubscriptionMessage(b("kv"), false));
      await waitFor(() => pub.subscriberCount("kv1") === 0, { timeoutMs: 5000, what: "the message-form cancel" });
    } finally {
      raw.end();
    }
  });

  test("SUB subscribes with commands to 3.1 publishers and with messages to 3.0 publishers", async () => {
    for (const minor of [1, 0]) {
      const received: Uint8Array[] = [];
      const listener = Bun.listen({
        hostname: "127.0.0.1",
        port: 0,
        socket: {
          open: (s) => void s.write(concat([encodeGreeting({ minor }), encodeReady("PUB")])),
          data: (_s, d) => void received.push(new Uint8Array(d)),
        },
      });
      const sub = new SubSocket();
      try {
        sub.subscribe("ab");
        sub.connect(`tcp://127.0.0.1:${listener.port}`);
        const events: string[] = [];
        const parser = new ZmtpParser({
          greeting() {},
          command: (c) => events.push(c.kind === "subscribe" ? `cmd:${td.decode(c.topic)}` : c.kind),
          message: (m) => events.push(`msg:${Buffer.from(m[0]!).toString("hex")}`),
        });
        await waitFor(() => {
          parser.feed(concat(received.splice(0)));
          return events.length >= 2;
        }, { timeoutMs: 5000, what: "the subscription bytes" });
        expect(events).toEqual(["ready", minor === 1 ? "cmd:ab" : "msg:016162"]);
      } finally {
        sub.close();
        listener.stop(true);
      }
    }
  });

  test("PING is answered with PONG echoing the context", async () => {
    using pub = new PubSocket();
    const ep = pub.bind("tcp://127.0.0.1:0");
    const raw = await rawPeer(ep);
    try {
      raw.write(concat([encodeGreeting(), encodeReady("SUB"), encodePing(100, b("hb-1"))]));
      await waitFor(() => raw.commands.some((c) => c.kind === "pong"), { timeoutMs: 5000, what: "the PONG" });
      expect(raw.commands.find((c) => c.kind === "pong")).toEqual({ kind: "pong", context: b("hb-1") });
    } finally {
      raw.end();
    }
  });
});
