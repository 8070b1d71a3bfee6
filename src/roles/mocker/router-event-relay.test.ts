// RouterEventRelay over loopback with our ZMTP SUB: router events decode with decodeRouterEvents,
// cursors start at 1 and are contiguous, ranks of one tick share a batch, removals carry the local
// hashes recorded at store time (per tier), clears reset them.
import { describe, expect, test } from "bun:test";
import type { KvEvent } from "../../core/kv/kv-events.ts";
import { createLogger } from "../../lib/logger.ts";
import { decodeSeq } from "../../protocol/kv-events/index.ts";
import { decodeRouterEvents, type RouterEvent } from "../../protocol/router-events.ts";
import { PubSocket, SubSocket } from "../../transport/zmtp/index.ts";
import { cleanupList, waitFor, withTimeout } from "../../../test/harness.ts";
import { LocalHashIndex } from "./local-hash-index.ts";
import { RouterEventRelay, type RouterEventRelayOptions } from "./router-event-relay.ts";

const logger = createLogger({ level: "silent" });
const cleanups = cleanupList();
function own<T extends { close(): void }>(s: T): T {
  cleanups.push(() => s.close());
  return s;
}
function relay(opts: Partial<RouterEventRelayOptions> = {}): RouterEventRelay {
  return own(new RouterEventRelay({ host: "127.0.0.1", workerId: "proc-a-3", dataParallelSize: 2, logger, ...opts }));
}
async function subscribed(r: RouterEventRelay): Promise<SubSocket> {
  const sub = own(new SubSocket({ logger }));
  sub.subscribe("");
  sub.connect(r.endpoint);
  await waitFor(() => r.subscriberCount() >= 1, { timeoutMs: 5_000, what: "the SUB's subscription to reach the relay" });
  return sub;
}
async function nextBatch(sub: SubSocket): Promise<{ topic: Uint8Array; cursor: bigint; events: RouterEvent[] }> {
  const m = await withTimeout(sub.receive(), 5_000, "a router event batch");
  expect(m.length).toBe(3);
  return { topic: m[0]!, cursor: decodeSeq(m[1]!), events: decodeRouterEvents(m[2]!) };
}
const stored = (tier: "device" | "host", seq: bigint[], local: bigint[], parentHash: bigint | null = null): KvEvent => ({
  kind: "stored", tier, parentHash, blockHashes: seq, localHashes: local, tokenIds: new Uint32Array(seq.length * 2), blockSize: 2,
});
const removed = (tier: "device" | "host", seq: bigint[]): KvEvent => ({ kind: "removed", tier, blockHashes: seq });

describe("router event relay", () => {
  test("one batch per tick for all ranks, cursor from 1, removals with their stored local hashes", async () => {
    const r = relay();
    expect(r.port).toBeGreaterThan(0);
    expect(r.endpoint).toBe(`tcp://127.0.0.1:${r.port}`);
    const sub = await subscribed(r);
    r.outlet(0).publish([stored("device", [10n, 11n], [100n, 110n]), stored("host", [10n], [100n])], 1);
    r.outlet(1).publish([stored("device", [20n], [200n], 5n)], 1);
    const first = await nextBatch(sub);
    expect(first.topic.length).toBe(0);
    expect(first.cursor).toBe(1n);
    expect(first.events).toEqual([
      { holder: { workerId: "proc-a-3", dpRank: 0 }, tier: "device", kind: "stored", blocks: [{ seqHash: 10n, localHash: 100n }, { seqHash: 11n, localHash: 110n }], parentHash: null },
      { holder: { workerId: "proc-a-3", dpRank: 0 }, tier: "host", kind: "stored", blocks: [{ seqHash: 10n, localHash: 100n }], parentHash: null },
      { holder: { workerId: "proc-a-3", dpRank: 1 }, tier: "device", kind: "stored", blocks: [{ seqHash: 20n, localHash: 200n }], parentHash: 5n },
    ]);

    // Next tick: removals get the local hashes back; rank 1 never stored 11 (per-rank records).
    r.outlet(0).publish([removed("device", [11n])], 2);
    r.outlet(1).publish([removed("device", [11n, 20n])], 2);
    const second = await nextBatch(sub);
    expect(second.cursor).toBe(2n);
    expect(second.events).toEqual([
      { holder: { workerId: "proc-a-3", dpRank: 0 }, tier: "device", kind: "removed", blocks: [{ seqHash: 11n, localHash: 110n }], parentHash: null },
      { holder: { workerId: "proc-a-3", dpRank: 1 }, tier: "device", kind: "removed", blocks: [{ seqHash: 20n, localHash: 200n }], parentHash: null },
    ]);
    expect(r.stats()).toMatchObject({ batchesPublished: 2, eventsPublished: 5, unknownRemovals: 1, subscribers: 1 });
  });

  test("each tier is tracked separately, so a removal of a block the tier never stored (or already removed) is left out and counted", async () => {
    const r = relay();
    const sub = await subscribed(r);
    r.publish(0, [stored("device", [1n], [7n]), removed("host", [1n]), removed("device", [1n]), removed("device", [1n])]);
    const b = await nextBatch(sub);
    expect(b.events.map((e) => [e.tier, e.kind, e.blocks])).toEqual([
      ["device", "stored", [{ seqHash: 1n, localHash: 7n }]],
      ["device", "removed", [{ seqHash: 1n, localHash: 7n }]],
    ]);
    expect(r.stats().unknownRemovals).toBe(2);
  });

  test("cleared: a G1 reset relays a device cleared and drops the device local-hash records only", async () => {
    const r = relay({ dataParallelSize: 1 });
    const sub = await subscribed(r);
    r.publish(0, [stored("device", [1n], [7n]), stored("host", [2n], [8n])]);
    r.flush();
    r.publish(0, [{ kind: "cleared", tier: "device" }]);
    r.flush();
    r.publish(0, [removed("device", [1n]), removed("host", [2n])]); // the host block is still known
    r.publish(0, [stored("host", [3n], [9n])]);
    const cursors = [];
    const batches = [];
    for (let i = 0; i < 3; i++) {
      const b = await nextBatch(sub);
      cursors.push(b.cursor);
      batches.push(b.events.map((e) => `${e.tier}:${e.kind}:${e.blocks.map((x) => x.localHash).join(",")}`));
    }
    expect(cursors).toEqual([1n, 2n, 3n]);
    expect(batches).toEqual([["device:stored:7", "host:stored:8"], ["device:cleared:"], ["host:removed:8", "host:stored:9"]]);
    expect(r.stats().unknownRemovals).toBe(1);
  });

  test("an engine event that cannot be relayed is counted and skipped", async () => {
    const r = relay();
    const sub = await subscribed(r);
    r.publish(0, [stored("device", [1n, 2n], [7n]), stored("device", [3n], [9n])]);
    expect((await nextBatch(sub)).events.map((e) => e.blocks[0]!.seqHash)).toEqual([3n]);
    expect(r.stats().invalidEvents).toBe(1);
  });

  test("an outlet for a rank out of range is refused", () => {
    const r = relay();
    expect(() => r.outlet(2)).toThrow("no rank 2 (ranks 0..1)");
  });

  test("bad options are refused", () => {
    expect(() => relay({ workerId: "" })).toThrow("workerId must not be empty");
    expect(() => relay({ dataParallelSize: 0 })).toThrow("dataParallelSize must be an integer >= 1");
  });

  test("close() sends what is queued, then frees the port", async () => {
    const r = relay();
    const sub = await subscribed(r);
    r.publish(0, [stored("device", [1n], [7n])]);
    r.close();
    expect((await nextBatch(sub)).cursor).toBe(1n);
    own(new PubSocket({ logger })).bind(r.endpoint);
  });

  test("publishes after close() do nothing", () => {
    const r = relay();
    r.publish(0, [stored("device", [1n], [7n])]);
    r.close();
    r.publish(0, [stored("device", [2n], [8n])]);
    expect(r.nextCursor).toBe(2);
  });
});

describe("LocalHashIndex", () => {
  test("stores per tier, returns and forgets on removal, clears one tier", () => {
    const idx = new LocalHashIndex();
    idx.stored("device", [1n, 2n], [10n, 20n]);
    idx.stored("host", [1n], [11n]);
    expect([idx.size("device"), idx.size("host")]).toEqual([2, 1]);
    expect(idx.removed("host", 1n)).toBe(11n);
    expect(idx.removed("host", 1n)).toBeUndefined();
    expect(idx.removed("device", 2n)).toBe(20n);
    idx.stored("host", [3n], [30n]);
    idx.cleared("device");
    expect([idx.size("device"), idx.size("host")]).toEqual([0, 1]);
    idx.cleared("host");
    expect(idx.size("host")).toBe(0);
    // u64 values beyond 2^53 and 2^63 keep their exact value (bigint keys compare by value).
    idx.stored("device", [0xffff_ffff_ffff_fffen], [0x8000_0000_0000_0001n]);
    expect(idx.removed("device", BigInt("18446744073709551614"))).toBe(0x8000_0000_0000_0001n);
  });
});
