import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import type { ZmtpCommand } from "./commands.ts";
import { concat, encodeCancel, encodeCommand, encodeError, encodeGreeting, encodeMessage, encodePing, encodeReady, encodeSubscribe } from "./encoder.ts";
import { ZmtpParser, type Greeting } from "./parser.ts";

type Recorded =
  | { kind: "greeting"; greeting: Greeting }
  | { kind: "command"; command: ZmtpCommand }
  | { kind: "message"; frames: number[][] };

function recorder(maxMessageBytes?: number) {
  const events: Recorded[] = [];
  const parser = new ZmtpParser(
    {
      greeting: (greeting) => events.push({ kind: "greeting", greeting }),
      // Copy out of the zero-copy views so a later chunk cannot alter what was recorded.
      command: (command) => events.push({ kind: "command", command: structuredClone(command) }),
      message: (frames) => events.push({ kind: "message", frames: frames.map((f) => [...f]) }),
    },
    maxMessageBytes === undefined ? {} : { maxMessageBytes },
  );
  return { parser, events };
}

const te = new TextEncoder();
const bytes = (s: string) => te.encode(s);
const handshake = () => concat([encodeGreeting(), encodeReady("SUB")]);

function parseWhole(stream: Uint8Array, max?: number) {
  const r = recorder(max);
  const error = r.parser.feed(stream);
  return { events: r.events, error };
}

function parseChunks(stream: Uint8Array, cuts: number[], max?: number) {
  const r = recorder(max);
  let error;
  let prev = 0;
  for (const cut of [...cuts, stream.length]) {
    error = r.parser.feed(stream.subarray(prev, cut)) ?? error;
    prev = cut;
  }
  return { events: r.events, error };
}

describe("ZMTP parser: well-formed streams", () => {
  const big = new Uint8Array(300).map((_, i) => i & 0xff);
  const stream = concat([
    handshake(),
    encodeSubscribe(bytes("kv@")),
    encodeMessage([bytes("topic"), new Uint8Array(8).fill(1), bytes("payload")]),
    encodeMessage([new Uint8Array(0), bytes("x"), new Uint8Array(0)]),
    encodeMessage([big]),
    encodePing(30, bytes("ctx")),
    encodeCancel(bytes("kv@")),
    encodeMessage([new Uint8Array(0)]),
  ]);

  test("emits greeting, READY, commands and messages in order", () => {
    const { events, error } = parseWhole(stream);
    expect(error).toBeUndefined();
    expect(events.map((e) => (e.kind === "command" ? e.command.kind : e.kind))).toEqual([
      "greeting", "ready", "subscribe", "message", "message", "message", "ping", "cancel", "message",
    ]);
    const g = events[0] as Extract<Recorded, { kind: "greeting" }>;
    expect(g.greeting).toEqual({ major: 3, minor: 1, mechanism: "NULL", asServer: false });
    const ready = (events[1] as Extract<Recorded, { kind: "command" }>).command;
    expect(ready.kind === "ready" && ready.socketType).toBe("SUB");
    const msgs = events.filter((e) => e.kind === "message").map((e) => (e as { frames: number[][] }).frames);
    expect(msgs[0]).toEqual([[...bytes("topic")], [1, 1, 1, 1, 1, 1, 1, 1], [...bytes("payload")]]);
    expect(msgs[1]).toEqual([[], [...bytes("x")], []]);
    expect(msgs[2]).toEqual([[...big]]);
    expect(msgs[3]).toEqual([[]]);
    const ping = (events[6] as Extract<Recorded, { kind: "command" }>).command;
    expect(ping).toEqual({ kind: "ping", ttlDs: 30, context: bytes("ctx") });
  });

  test("any split into two chunks gives the same events", () => {
    const reference = parseWhole(stream).events;
    for (let cut = 0; cut <= stream.length; cut++) {
      const { events, error } = parseChunks(stream, [cut]);
      expect(error).toBeUndefined();
      expect(events).toEqual(reference);
    }
  });

  test("byte-at-a-time feeding gives the same events", () => {
    const reference = parseWhole(stream).events;
    const cuts = Array.from({ length: stream.length - 1 }, (_, i) => i + 1);
    expect(parseChunks(stream, cuts).events).toEqual(reference);
  });

  test("frames kept by the handler stay intact after later chunks (no buffer reuse)", () => {
    const kept: Uint8Array[][] = [];
    const parser = new ZmtpParser({ greeting() {}, command() {}, message: (f) => kept.push(f) });
    const s = concat([handshake(), encodeMessage([bytes("aaaa")]), encodeMessage([new Uint8Array(400).fill(9)])]);
    for (let i = 0; i < s.length; i += 7) parser.feed(s.slice(i, i + 7));
    expect(kept.map((m) => [...m[0]!].slice(0, 4))).toEqual([[97, 97, 97, 97], [9, 9, 9, 9]]);
  });

  test("a declared frame size is allocated only as its bytes arrive, never ahead of twice what was received", () => {
    const size = 16 * 1024 * 1024 - 64; // what a hostile peer declares, then trickles
    const body = new Uint8Array(size).map((_, i) => (i * 7) & 0xff);
    const frame = encodeMessage([body]);
    const headerEnd = frame.length - size;
    const messages: Uint8Array[][] = [];
    const parser = new ZmtpParser({ greeting() {}, command() {}, message: (frames) => messages.push(frames) });
    parser.feed(concat([handshake(), frame.subarray(0, headerEnd + 10)]));
    expect(parser.partialFrameBytes).toBeLessThanOrEqual(4096);
    // Feed the rest in uneven chunks: the allocation never runs ahead of 2× what was received.
    let at = headerEnd + 10;
    for (let step = 1; at < frame.length; step++) {
      const next = Math.min(frame.length, at + ((step * 7919) % 300_000) + 1);
      parser.feed(frame.subarray(at, next));
      at = next;
      const received = at - headerEnd;
      if (at < frame.length) expect(parser.partialFrameBytes).toBeLessThanOrEqual(Math.max(4096, 2 * received));
    }
    expect(parser.partialFrameBytes).toBe(0);
    expect(parser.error).toBeUndefined();
    expect(messages.length).toBe(1);
    expect(messages[0]!.length).toBe(1);
    expect(Buffer.from(messages[0]![0]!).equals(Buffer.from(body))).toBe(true);
  });

  test("property: random messages survive encode + random chunking", () => {
    const frameArb = fc.uint8Array({ minLength: 0, maxLength: 600 });
    const msgArb = fc.array(frameArb, { minLength: 1, maxLength: 4 });
    fc.assert(
      fc.property(fc.array(msgArb, { minLength: 1, maxLength: 8 }), fc.array(fc.nat(), { maxLength: 12 }), (msgs, rawCuts) => {
        const s = concat([handshake(), ...msgs.map((m) => encodeMessage(m))]);
        const cuts = [...new Set(rawCuts.map((c) => c % (s.length + 1)))].sort((a, b) => a - b);
        const { events, error } = parseChunks(s, cuts);
        expect(error).toBeUndefined();
        const got = events.filter((e) => e.kind === "message").map((e) => (e as { frames: number[][] }).frames);
        expect(got).toEqual(msgs.map((m) => m.map((f) => [...f])));
      }),
      { numRuns: 200 },
    );
  });

  test("ERROR during the handshake is delivered, not treated as a violation", () => {
    const { events, error } = parseWhole(concat([encodeGreeting(), encodeError("no thanks")]));
    expect(error).toBeUndefined();
    expect(events[1]).toEqual({ kind: "command", command: { kind: "error", reason: "no thanks" } });
  });

  test("unknown commands after READY are delivered as unknown", () => {
    const { events, error } = parseWhole(concat([handshake(), encodeCommand("HELLO", bytes("x"))]));
    expect(error).toBeUndefined();
    expect(events[2]).toEqual({ kind: "command", command: { kind: "unknown", name: "HELLO", data: bytes("x") } });
  });

  test("a ZMTP 3.0 greeting is accepted and reports minor 0", () => {
    const { events } = parseWhole(concat([encodeGreeting({ minor: 0 }), encodeReady("PUB")]));
    expect((events[0] as Extract<Recorded, { kind: "greeting" }>).greeting.minor).toBe(0);
  });
});

describe("ZMTP parser: violations are values with a clear reason and offset", () => {
  function expectViolation(stream: Uint8Array, reason: RegExp, offset: number, max?: number) {
    const whole = parseWhole(stream, max);
    expect(whole.error?.message).toMatch(reason);
    expect(whole.error?.offset).toBe(offset);
    // Same verdict however the bytes are split.
    for (let cut = 0; cut <= stream.length; cut += Math.max(1, Math.floor(stream.length / 40))) {
      const split = parseChunks(stream, [cut], max);
      expect(split.error?.message).toMatch(reason);
      expect(split.error?.offset).toBe(offset);
    }
    return whole;
  }

  test("HTTP garbage is refused at the first byte", () => {
    const r = expectViolation(bytes("GET / HTTP/1.1\r\n\r\n"), /not speaking ZMTP/, 0);
    expect(r.events).toEqual([]);
    expect(r.error?.code).toBe("PROTOCOL_INVALID");
  });

  test("ZMTP 1.0 and 2.0 peers are refused", () => {
    const v1 = encodeGreeting();
    v1[9] = 0x7e;
    expectViolation(v1, /ZMTP 1\.0/, 9);
    const v2 = encodeGreeting();
    v2[10] = 1;
    expectViolation(v2, /unsupported ZMTP version 1\.x/, 10);
  });

  test("an unsupported mechanism is named", () => {
    expectViolation(encodeGreeting({ mechanism: "PLAIN" }), /unsupported security mechanism "PLAIN"/, 12);
    expectViolation(encodeGreeting({ mechanism: "CURVE" }), /"CURVE"; only NULL/, 12);
  });

  test("oversized frames and messages are refused before their body arrives", () => {
    const hs = handshake();
    const r = expectViolation(concat([hs, encodeMessage([new Uint8Array(2000)])]), /2000 bytes exceeds maxMessageBytes 1024/, hs.length, 1024);
    expect(r.events.length).toBe(2);
    // The limit counts all frames of one multipart message.
    expectViolation(concat([hs, encodeMessage([new Uint8Array(600), new Uint8Array(600)])]), /at least 1200 bytes/, hs.length + 9 + 600, 1024);
    // A long-frame size near 2^64 does not wrap around.
    const huge = new Uint8Array([0x02, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]);
    expectViolation(concat([hs, huge]), /exceeds maxMessageBytes/, hs.length);
    // Without a limit given, 16 MiB: a frame declaring one byte more is refused at its header.
    const declare = (n: number) => Uint8Array.from([0x02, 0, 0, 0, 0, (n >>> 24) & 0xff, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff]);
    expectViolation(concat([hs, declare(16 * 1024 * 1024 + 1)]), /16777217 bytes exceeds maxMessageBytes 16777216/, hs.length);
    expect(parseWhole(concat([hs, declare(16 * 1024 * 1024)])).error).toBeUndefined(); // waits for its body
    // Each byte of the size's high word counts: 2^40 + 5 is not 5.
    for (const at of [1, 2, 3, 4]) {
      const size = new Uint8Array([0x02, 0, 0, 0, 0, 0, 0, 0, 5]);
      size[at] = 1;
      expectViolation(concat([hs, size, new Uint8Array(5)]), /exceeds maxMessageBytes/, hs.length);
    }
    expectViolation(concat([hs, encodeCommand("SUBSCRIBE", new Uint8Array(5000))]), /command frame of 5010 bytes/, hs.length, 1024);
  });

  test("handshake order is enforced", () => {
    const g = encodeGreeting();
    expectViolation(concat([g, encodeMessage([bytes("early")])]), /before the handshake finished/, 64 + 2);
    expectViolation(concat([g, encodeSubscribe(bytes("a"))]), /expected READY .* got SUBSCRIBE/, 64 + 2);
    const hs = handshake();
    expectViolation(concat([hs, encodeReady("SUB")]), /duplicate READY/, hs.length + 2);
  });

  test("malformed frames and commands", () => {
    const hs = handshake();
    expectViolation(concat([hs, new Uint8Array([0x80, 0x01, 0x00])]), /reserved bits/, hs.length);
    expectViolation(concat([hs, new Uint8Array([0x05, 0x02, 0x01, 0x41])]), /command frame with the MORE flag/, hs.length);
    const cmdInMulti = concat([hs, new Uint8Array([0x01, 0x01, 0x61]), encodeSubscribe(bytes("a"))]);
    expectViolation(cmdInMulti, /command frame inside a multipart message/, hs.length + 3 + 2);
    expectViolation(concat([encodeGreeting(), new Uint8Array([0x04, 0x03, 0x09, 0x52, 0x45])]), /malformed command: command name of 9 bytes/, 66);
    expectViolation(concat([encodeGreeting(), encodeCommand("READY", new Uint8Array(0))]), /READY without a Socket-Type/, 66 + 6);
    const truncatedProp = encodeCommand("READY", new Uint8Array([11, ...bytes("Socket-Type"), 0, 0, 0, 9, 0x50]));
    expectViolation(concat([encodeGreeting(), truncatedProp]), /value of 9 bytes runs past/, 66 + 6 + 12);
    expectViolation(concat([hs, encodeCommand("PING", new Uint8Array(1))]), /PING shorter/, hs.length + 2 + 5);
  });

  test("property: arbitrary bytes (raw or after a valid handshake) end in events or a ProtocolError, never a throw", () => {
    fc.assert(
      fc.property(fc.boolean(), fc.uint8Array({ maxLength: 400 }), fc.array(fc.nat(), { maxLength: 6 }), (afterHandshake, junk, rawCuts) => {
        const s = afterHandshake ? concat([handshake(), junk]) : junk;
        const cuts = [...new Set(rawCuts.map((c) => c % (s.length + 1)))].sort((a, b) => a - b);
        const { error } = parseChunks(s, cuts, 4096);
        if (error) expect(error.code).toBe("PROTOCOL_INVALID");
      }),
      { numRuns: 300 },
    );
  });

  test("after a violation nothing more is delivered", () => {
    const r = recorder();
    expect(r.parser.feed(bytes("XYZ"))).toBeDefined();
    const before = r.events.length;
    expect(r.parser.feed(handshake())).toBe(r.parser.error!);
    expect(r.events.length).toBe(before);
  });
});
