// RankPublisher over loopback with our own ZMTP SUB and DEALER: live frames decode as vLLM batches
// with the right topic, contiguous seqs, media, ownership and tokens; replay returns the live bytes
// and the end marker; bad replay requests are counted; HWM drops are counted; close frees the ports.
import { describe, expect, test } from "bun:test";
import type { KvEvent } from "../../core/kv/kv-events.ts";
import { createLogger } from "../../lib/logger.ts";
import { decodeBatch, decodeSeq, encodeSeq, REPLAY_END_SEQ, type BlockRemoved, type BlockStored } from "../../protocol/kv-events/index.ts";
import { DealerSocket, PubSocket, SubSocket, type Frames, type ZmtpSocket } from "../../transport/zmtp/index.ts";
import { cleanupList, waitFor, withTimeout } from "../../../test/harness.ts";
import { unpack } from "../../protocol/msgpack.ts";
import { RankPublisher, type RankPublisherOptions } from "./rank-publisher.ts";

const logger = createLogger({ level: "silent" });
const td = new TextDecoder();
const EMPTY = new Uint8Array(0);
const H1 = 0xcb38e4d7fb2dca5cn;
const H2 = 0x44a2b2379d6d3c3dn;
const H3 = 0x0123456789abcdefn;

const cleanups = cleanupList();
function own<T extends { close(): void }>(s: T): T {
  cleanups.push(() => s.close());
  return s;
}
function publisher(opts: Partial<RankPublisherOptions> = {}): RankPublisher {
  return own(new RankPublisher({ host: "127.0.0.1", port: 0, topic: "", dataParallelRank: 0, kvcrOwnsHost: false, logger, ...opts }));
}
async function subscribed(pub: RankPublisher, topic = pub.topic, opts: ConstructorParameters<typeof SubSocket>[0] = {}): Promise<SubSocket> {
  const sub = own(new SubSocket({ logger, ...opts }));
  sub.subscribe(topic);
  sub.connect(pub.endpoint);
  await waitFor(() => pub.subscriberCount() >= 1, { timeoutMs: 5_000, what: "the SUB's subscription to reach the publisher" });
  return sub;
}
/** True when ::1 can be bound here; without it a developer run skips with one line, and under CI=true it fails. */
function ipv6Loopback(): boolean {
  try {
    Bun.listen({ hostname: "::1", port: 0, socket: { data() {} } }).stop(true);
    return true;
  } catch (err) {
    if (process.env.CI === "true") throw new Error(`cannot bind ::1 (CI=true requires IPv6 loopback): ${(err as Error).message}`);
    console.warn("skipping the IPv6 publisher test: ::1 cannot be bound here");
    return false;
  }
}
const next = (s: ZmtpSocket & { receive(): Promise<Frames> }, what = "a message") => withTimeout(s.receive(), 5_000, what);

/** One engine step per entry; the engine's token views are slices of one reused buffer. */
function steps(): KvEvent[][] {
  const tokens = new Uint32Array([11, 12, 13, 14, 21, 22, 23, 24, 31, 32, 33, 34]);
  return [
    [{ kind: "stored", tier: "device", parentHash: null, blockHashes: [H1, H2], localHashes: [1n, 2n], tokenIds: tokens.subarray(0, 8), blockSize: 4 }],
    [{ kind: "removed", tier: "device", blockHashes: [H2] }],
    [],
    [
      { kind: "stored", tier: "host", parentHash: H1, blockHashes: [H3], localHashes: [3n], tokenIds: tokens.subarray(8, 12), blockSize: 4 },
      { kind: "removed", tier: "host", blockHashes: [H3] },
    ],
    [{ kind: "cleared", tier: "device" }],
  ];
}

describe("live stream", () => {
  test("state-agent mode: topic on every frame, seqs 0.. contiguous, G1 plain, G2 kvcr-owned, tokens and rank right", async () => {
    const topic = "kvcr-00112233aabbccdd";
    const pub = publisher({ topic, dataParallelRank: 1, kvcrOwnsHost: true });
    const sub = await subscribed(pub);
    const ts = 1_700_000_123.25;
    for (const s of steps()) pub.publish(s, ts);
    const got = [];
    for (let i = 0; i < 4; i++) got.push(await next(sub, `batch ${i}`));
    expect(got.map((m) => m.length)).toEqual([3, 3, 3, 3]);
    expect(got.map((m) => td.decode(m[0]!))).toEqual([topic, topic, topic, topic]);
    expect(got.map((m) => decodeSeq(m[1]!))).toEqual([0n, 1n, 2n, 3n]); // the empty step used no seq
    const batches = got.map((m) => decodeBatch(m[2]!));
    expect(batches.every((b) => b.ts === ts && b.dataParallelRank === 1)).toBe(true);

    const g1 = batches[0]!.events[0] as BlockStored;
    expect([g1.type, g1.medium, g1.ownership, g1.blockHashes, g1.parentBlockHash, g1.tokenIds, g1.blockSize]).toEqual(["BlockStored", "GPU", undefined, [H1, H2], null, [11, 12, 13, 14, 21, 22, 23, 24], 4]);
    const g1Removed = batches[1]!.events[0] as BlockRemoved;
    expect([g1Removed.type, g1Removed.medium, g1Removed.ownership, g1Removed.blockHashes]).toEqual(["BlockRemoved", "GPU", undefined, [H2]]);
    const [g2, g2Removed] = batches[2]!.events as [BlockStored, BlockRemoved];
    expect([g2.medium, g2.ownership, g2.parentBlockHash, g2.tokenIds]).toEqual(["CPU_PINNED", "kvcr", H1, [31, 32, 33, 34]]);
    expect([g2Removed.medium, g2Removed.ownership, g2Removed.blockHashes]).toEqual(["CPU_PINNED", "kvcr", [H3]]);
    expect(batches[3]!.events).toEqual([{ type: "AllBlocksCleared" }]);
    expect(pub.stats()).toMatchObject({ batchesPublished: 4, eventsPublished: 5, batchesDroppedByHwm: 0, subscribers: 1 });
  });

  test("direct mode: empty topic (vLLM's default), host events without ownership", async () => {
    const pub = publisher();
    const sub = await subscribed(pub);
    pub.publish(steps()[3]!, 1);
    const m = await next(sub);
    expect(m[0]!.length).toBe(0);
    expect(decodeBatch(m[2]!).events.map((e) => (e.type === "AllBlocksCleared" ? e.type : [e.medium, "ownership" in e]))).toEqual([["CPU_PINNED", false], ["CPU_PINNED", false]]);
  });

  test("--kv-events-encoding array and --host-kv-events-medium CPU: vLLM 0.9–0.23's positional events, vLLM's G2 medium", async () => {
    const pub = publisher({ encoding: "array", hostMedium: "CPU" });
    const sub = await subscribed(pub);
    pub.publish([...steps()[0]!, ...steps()[3]!], 1);
    const payload = (await next(sub))[2]!;
    // As an array_like msgspec struct decodes it: each event a list whose first element is its tag.
    const raw = unpack(payload) as [number, unknown[][], number];
    expect(raw[1].map((e) => [e[0], Array.isArray(e)])).toEqual([["BlockStored", true], ["BlockStored", true], ["BlockRemoved", true]]);
    expect(raw[1].map((e) => (e[0] === "BlockStored" ? e[6] : e[2]))).toEqual(["GPU", "CPU", "CPU"]);
    expect(decodeBatch(payload).events.map((e) => e.type)).toEqual(["BlockStored", "BlockStored", "BlockRemoved"]);
  });

  test("a step the codec refuses is counted and uses no seq", async () => {
    const pub = publisher();
    const sub = await subscribed(pub);
    pub.publish([{ kind: "stored", tier: "device", parentHash: null, blockHashes: [H1], localHashes: [1n], tokenIds: new Uint32Array(3), blockSize: 4 }], 1);
    pub.publish(steps()[1]!, 2);
    const m = await next(sub);
    expect(decodeSeq(m[1]!)).toBe(0n);
    expect(pub.stats()).toMatchObject({ batchesPublished: 1, encodeErrors: 1 });
  });
});

describe("replay", () => {
  async function dealerFor(pub: RankPublisher): Promise<DealerSocket> {
    const dealer = own(new DealerSocket({ logger }));
    dealer.connect(pub.replayEndpoint!);
    return dealer;
  }
  /** Sends a request and collects the reply up to and including the end marker. */
  async function replay(dealer: DealerSocket, start: bigint): Promise<Frames[]> {
    dealer.send([EMPTY, encodeSeq(start)]);
    const out: Frames[] = [];
    for (;;) {
      const m = await next(dealer, "a replay message");
      out.push(m);
      if (m.length === 4 && m[2]!.length === 8 && decodeSeq(m[2]!) === REPLAY_END_SEQ) return out;
    }
  }

  test("a request gets the held batches with seq >= start (an old start from the oldest, a future one none), byte-identical to live, then the end marker", async () => {
    const topic = "kvcr-replaytopic0000";
    const pub = publisher({ topic, replayPort: 0, replayCapacity: 3 });
    expect(pub.replayPort).toBeGreaterThan(0);
    const sub = await subscribed(pub);
    const live = new Map<bigint, Uint8Array>();
    for (let i = 0; i < 5; i++) pub.publish([{ kind: "removed", tier: "device", blockHashes: [BigInt(i)] }], 100 + i);
    for (let i = 0; i < 5; i++) {
      const m = await next(sub);
      live.set(decodeSeq(m[1]!), m[2]!);
    }
    const dealer = await dealerFor(pub);

    const fromOld = await replay(dealer, 0n); // older than the buffer: from the oldest held (seq 2)
    expect(fromOld.map((m) => m.length)).toEqual([4, 4, 4, 4]);
    expect(fromOld.map((m) => m[0]!.length)).toEqual([0, 0, 0, 0]); // the delimiter frame
    expect(fromOld.slice(0, 3).map((m) => td.decode(m[1]!))).toEqual([topic, topic, topic]);
    expect(fromOld.slice(0, 3).map((m) => decodeSeq(m[2]!))).toEqual([2n, 3n, 4n]);
    for (const m of fromOld.slice(0, 3)) expect(m[3]).toEqual(live.get(decodeSeq(m[2]!))!);
    const end = fromOld[3]!;
    expect([end[1]!.length, Buffer.from(end[2]!).toString("hex"), end[3]!.length]).toEqual([0, "ffffffffffffffff", 0]);

    expect((await replay(dealer, 3n)).map((m) => decodeSeq(m[2]!))).toEqual([3n, 4n, REPLAY_END_SEQ]);
    expect((await replay(dealer, 99n)).map((m) => decodeSeq(m[2]!))).toEqual([REPLAY_END_SEQ]); // beyond the newest
    expect(pub.stats()).toMatchObject({ replayRequestsServed: 3, badReplayRequests: 0, truncatedReplays: 0 });
  });

  test("a full buffer replays whole (the ROUTER HWM fits a reply), a second reply that does not fit behind it is cut and counted", async () => {
    const pub = publisher({ replayPort: 0, replayCapacity: 2_000 });
    // 2,000 batches of ~8 KiB: more than the transport's default HWM (1,000) and 16 MiB, more than
    // loopback's socket buffers take at once, so the reply really queues in user space.
    const step: KvEvent[] = [{ kind: "stored", tier: "device", parentHash: null, blockHashes: Array.from({ length: 128 }, (_, i) => BigInt(i) << 40n), localHashes: new Array(128).fill(1n), tokenIds: new Uint32Array(128 * 16).fill(70_000), blockSize: 16 }];
    for (let i = 0; i < 2_000; i++) pub.publish(step, i);
    const dealer = await dealerFor(pub);
    const reply = await replay(dealer, 0n);
    expect(reply.length).toBe(2_001);
    expect(decodeSeq(reply[0]![2]!)).toBe(0n);
    expect(decodeSeq(reply[1_999]![2]!)).toBe(1_999n);
    expect(pub.stats()).toMatchObject({ replayRequestsServed: 1, truncatedReplays: 0 });
    // Two requests in one write: the second reply does not fit behind the first, so it is cut
    // (counted, logged, no end marker) rather than silently holed; the first stays complete.
    dealer.send([EMPTY, encodeSeq(0n)]);
    const second = replay(dealer, 0n);
    expect((await second).length).toBe(2_001);
    await waitFor(() => pub.stats().truncatedReplays === 1, { timeoutMs: 5_000, what: "the second reply to be counted as truncated" });
    expect(pub.stats().replayRequestsServed).toBe(2);
  });

  test("malformed requests are counted, logged once, never answered, and the socket keeps serving", async () => {
    const lines: string[] = [];
    const capture = createLogger({ level: "warn", format: "json", stream: { write: (s: string) => lines.push(s) > 0 } as unknown as NodeJS.WritableStream });
    const pub = publisher({ replayPort: 0, logger: capture });
    pub.publish(steps()[0]!, 1);
    const dealer = await dealerFor(pub);
    dealer.send([EMPTY]); // no seq frame
    dealer.send([EMPTY, new Uint8Array(4)]); // seq of 4 bytes
    dealer.send([EMPTY, encodeSeq(0n), EMPTY]); // an extra frame
    dealer.send([new Uint8Array([1]), encodeSeq(0n)]); // non-empty delimiter
    // Replies on one connection keep their order: the first message back answers the good request.
    const reply = await replay(dealer, 0n);
    expect(reply.map((m) => decodeSeq(m[2]!))).toEqual([0n, REPLAY_END_SEQ]);
    expect(pub.stats()).toMatchObject({ badReplayRequests: 4, replayRequestsServed: 1 });
    const warnings = lines.filter((l) => l.includes("bad request"));
    expect(warnings.length).toBe(1); // rate-limited: the first is reported, the others counted
    expect(warnings[0]).toContain("1 frames after the identity, expected 2");
  });
});

describe("flow control and lifecycle", () => {
  test("a subscriber that does not read: batches beyond its HWM are dropped and counted, seqs still advance", async () => {
    const pub = publisher({ sendHighWaterMark: 16 });
    // receiveHighWaterMark 1 and no receive(): the SUB stops reading its TCP socket.
    await subscribed(pub, "", { receiveHighWaterMark: 1 });
    const tokens = new Uint32Array(64 * 16);
    const big: KvEvent[] = [{ kind: "stored", tier: "device", parentHash: null, blockHashes: Array.from({ length: 64 }, (_, i) => BigInt(i) << 40n), localHashes: new Array(64).fill(1n), tokenIds: tokens, blockSize: 16 }];
    // A synchronous burst: the kernel's socket buffers (a few MiB on loopback) fill, then the
    // user-space queue reaches 16. Bounded: 20,000 batches of ~4 KiB are far more than enough.
    let sent = 0;
    while (pub.stats().batchesDroppedByHwm === 0 && sent < 20_000) {
      pub.publish(big, sent);
      sent++;
    }
    const stats = pub.stats();
    expect(stats.batchesDroppedByHwm).toBe(1);
    expect(stats.batchesPublished).toBe(sent);
    pub.publish(big, sent);
    expect(pub.stats().batchesDroppedByHwm).toBe(2);
    expect(pub.nextSeq).toBe(sent + 1);
  });

  test("publish after close() is a no-op", () => {
    const pub = publisher({ replayPort: 0 });
    pub.close();
    pub.publish(steps()[0]!, 1);
    expect(pub.nextSeq).toBe(0);
  });

  test("close() closes the PUB and the replay ROUTER: both ports can be bound again", () => {
    const pub = publisher({ replayPort: 0 });
    pub.close();
    const again = own(new PubSocket({ logger }));
    again.bind(pub.endpoint);
    again.bind(pub.replayEndpoint!);
  });

  test.skipIf(!ipv6Loopback())("an IPv6 host, bracketed or not, binds and reports a dialable endpoint", async () => {
    for (const host of ["::1", "[::1]"]) {
      const pub = publisher({ host, replayPort: 0 });
      expect(pub.endpoint).toBe(`tcp://[::1]:${pub.port}`);
      expect(pub.replayEndpoint).toBe(`tcp://[::1]:${pub.replayPort}`);
      const sub = await subscribed(pub);
      pub.publish(steps()[1]!, 1);
      expect(decodeSeq((await next(sub))[1]!)).toBe(0n);
    }
  });

  test("a replay port already in use fails the constructor and leaves no PUB bound behind", () => {
    const portOf = (endpoint: string) => Number(endpoint.split(":").pop());
    const takenPort = portOf(own(new PubSocket({ logger })).bind("tcp://127.0.0.1:0"));
    const probe = own(new PubSocket({ logger }));
    const pubPort = portOf(probe.bind("tcp://127.0.0.1:0"));
    probe.close(); // free again: the publisher's PUB binds it, then its replay bind fails
    expect(() => publisher({ port: pubPort, replayPort: takenPort })).toThrow(/cannot bind/);
    own(new PubSocket({ logger })).bind(`tcp://127.0.0.1:${pubPort}`); // the failed publisher's PUB was released
  });
});
