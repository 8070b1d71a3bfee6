// Event-stream faults on a real RankPublisher over loopback (our ZMTP SUB and DEALER): what the
// subscriber receives and what replay still holds, per kind.
import { describe, expect, test } from "bun:test";
import { cleanupList, waitFor, withTimeout } from "../../../../test/harness.ts";
import type { KvEvent } from "../../../core/kv/kv-events.ts";
import { createLogger } from "../../../lib/logger.ts";
import { checkFault } from "../../../protocol/faults.ts";
import { decodeBatch, decodeSeq, encodeSeq, REPLAY_END_SEQ } from "../../../protocol/kv-events/index.ts";
import { DealerSocket, SubSocket, type Frames } from "../../../transport/zmtp/index.ts";
import { RankPublisher } from "../rank-publisher.ts";
import { rankEventFaults } from "./event-faults.ts";
import { FaultTable } from "./fault-table.ts";

const logger = createLogger({ level: "silent" });
const cleanups = cleanupList();
const EMPTY = new Uint8Array(0);

function own<T extends { close(): void }>(s: T): T {
  cleanups.push(() => s.close());
  return s;
}

async function rig() {
  const table = new FaultTable(["w"], 1, logger);
  cleanups.push(() => table.close());
  const pub = own(new RankPublisher({ host: "127.0.0.1", port: 0, replayPort: 0, topic: "", dataParallelRank: 0, kvcrOwnsHost: false, logger, faults: rankEventFaults(table, 0, 0) }));
  const sub = own(new SubSocket({ logger }));
  sub.subscribe("");
  sub.connect(pub.endpoint);
  await waitFor(() => pub.subscriberCount() >= 1, { what: "subscription" });
  const dealer = own(new DealerSocket({ logger }));
  dealer.connect(pub.replayEndpoint!);
  const add = (body: object) => {
    const c = checkFault(body);
    if (!c.ok) throw new Error(c.problem);
    const r = table.add(c.value);
    if (!r.ok) throw new Error(r.problem);
    return r.fault.id;
  };
  let n = 0;
  /** One batch: a removal of block n (its hash tells batches apart). */
  const publish = () => pub.publish([{ kind: "removed", tier: "device", blockHashes: [BigInt(n++)] } satisfies KvEvent], 1);
  const receive = async (count: number) => {
    const out: { seq: bigint; block: bigint | undefined; bytes: Uint8Array }[] = [];
    for (let i = 0; i < count; i++) {
      const m = await withTimeout(sub.receive(), 5000, `live batch ${i}`);
      let block: bigint | undefined;
      try {
        const e = decodeBatch(m[2]!).events[0];
        block = e?.type === "BlockRemoved" ? e.blockHashes[0] : undefined;
      } catch {
        block = undefined; // undecodable (corrupt_payload)
      }
      out.push({ seq: decodeSeq(m[1]!), block, bytes: m[2]! });
    }
    return out;
  };
  const replay = async (start = 0n) => {
    dealer.send([EMPTY, encodeSeq(start)]);
    const seqs: bigint[] = [];
    for (;;) {
      const m: Frames = await withTimeout(dealer.receive(), 5000, "replay");
      const seq = decodeSeq(m[2]!);
      if (seq === REPLAY_END_SEQ) return seqs;
      seqs.push(seq);
    }
  };
  // As fault-hooks.ts wires it in the mocker.
  table.onChange({ started: (h) => void (h.spec.kind === "reset_seq" && pub.resetSeq()) });
  return { table, pub, dealer, add, publish, receive, replay };
}

describe("event-stream faults", () => {
  test("drop_batches keeps the seq: the subscriber sees a gap that replay fills", async () => {
    const r = await rig();
    r.add({ kind: "drop_batches", count: 1, start: 0 });
    r.publish(); // dropped
    r.publish();
    expect((await r.receive(1)).map((b) => [b.seq, b.block])).toEqual([[1n, 1n]]);
    expect(await r.replay()).toEqual([0n, 1n]);
    expect(r.pub.stats().faultedBatches).toBe(1);
  });

  test("drop_batches with renumber is a silent loss: no gap, and replay never had it", async () => {
    const r = await rig();
    r.publish();
    r.add({ kind: "drop_batches", count: 1, renumber: true });
    r.publish(); // lost, no seq used
    r.publish();
    expect((await r.receive(2)).map((b) => [b.seq, b.block])).toEqual([[0n, 0n], [1n, 2n]]);
    expect(await r.replay()).toEqual([0n, 1n]);
  });

  test("duplicate_batches sends a batch twice; reorder_batches swaps it with the next", async () => {
    const r = await rig();
    r.add({ kind: "duplicate_batches", count: 1 });
    r.publish();
    r.add({ kind: "reorder_batches", count: 1 });
    r.publish(); // held
    r.publish(); // goes first, then the held one
    expect((await r.receive(4)).map((b) => b.seq)).toEqual([0n, 0n, 2n, 1n]);
  });

  test("corrupt_payload sends undecodable bytes live; replay serves the true batch", async () => {
    const r = await rig();
    r.add({ kind: "corrupt_payload", count: 1 });
    r.publish();
    r.publish();
    const got = await r.receive(2);
    expect(got.map((b) => [b.seq, b.block])).toEqual([[0n, undefined], [1n, 1n]]);
    expect(() => decodeBatch(got[0]!.bytes)).toThrow();
    expect(await r.replay()).toEqual([0n, 1n]);
  });

  test("delay_batches delays a batch and keeps the order of those behind it", async () => {
    const r = await rig();
    r.add({ kind: "delay_batches", ms: 60, count: 1 });
    const t0 = performance.now();
    r.publish();
    r.publish();
    expect((await r.receive(2)).map((b) => b.seq)).toEqual([0n, 1n]);
    expect(performance.now() - t0).toBeGreaterThanOrEqual(59); // the delay happened (a lower bound)
  });

  test("reset_seq numbers from 0 again and empties replay, as a restarted publisher", async () => {
    const r = await rig();
    r.publish();
    r.publish();
    r.add({ kind: "reset_seq" });
    r.publish();
    expect((await r.receive(3)).map((b) => [b.seq, b.block])).toEqual([[0n, 0n], [1n, 1n], [0n, 2n]]);
    expect(await r.replay()).toEqual([0n]);
    expect(r.pub.stats().batchesPublished).toBe(3);
  });

  test("stop_publishing sends nothing while it lasts (batches still numbered and replayable)", async () => {
    const r = await rig();
    const id = r.add({ kind: "stop_publishing" });
    r.publish();
    r.publish();
    r.table.remove(id);
    r.publish();
    expect((await r.receive(1)).map((b) => b.seq)).toEqual([2n]);
    expect(await r.replay()).toEqual([0n, 1n, 2n]);
  });

  test("no_replay leaves replay requests unanswered while it lasts", async () => {
    const r = await rig();
    r.publish();
    await r.receive(1);
    const id = r.add({ kind: "no_replay" });
    r.dealer.send([EMPTY, encodeSeq(0n)]);
    await waitFor(() => r.pub.stats().ignoredReplayRequests === 1, { what: "the request ignored" });
    r.table.remove(id);
    // The only answer the DEALER gets is to the request after the fault.
    expect(await r.replay()).toEqual([0n]);
    expect(r.pub.stats()).toMatchObject({ replayRequestsServed: 1, ignoredReplayRequests: 1 });
  });
});
