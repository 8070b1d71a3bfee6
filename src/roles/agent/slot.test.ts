// One agent slot against in-process ZMTP sockets: a hostile replay endpoint cannot hold a repair
// open, and /v1/slots shows the raw connection and the age of the last batch.
import { afterEach, describe, expect, test } from "bun:test";
import { createLogger } from "../../lib/logger.ts";
import { createBlockHasher } from "../../lib/xxh3.ts";
import { encodeBatch, encodeSeq, parseReplayRequest, replayBatchFrames, replayEndFrames } from "../../protocol/kv-events/index.ts";
import { PubSocket, RouterSocket } from "../../transport/zmtp/index.ts";
import { waitFor } from "../../../test/harness.ts";
import { KvStateAgent, type SlotView } from "./agent.ts";
import { RouterEventOutbound } from "./outbound.ts";

const logger = createLogger({ level: "silent" });
const owner = `${"ab".repeat(16)}:${"cd".repeat(16)}/${"0".repeat(16)}/${"0".repeat(31)}1`;
const EMPTY = new Uint8Array(0);
const payload = encodeBatch({ ts: 1, events: [], dataParallelRank: 0 });
const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function setup(opts: { replay?: (identity: Uint8Array, start: bigint, router: RouterSocket) => void; nowMs?: () => number; replayTimeoutMs?: number }) {
  const pub = new PubSocket({ logger });
  const rawEndpoint = pub.bind("tcp://127.0.0.1:0");
  cleanups.push(() => pub.close());
  let replayEndpoint: string | undefined;
  if (opts.replay) {
    const router = new RouterSocket({ logger });
    replayEndpoint = router.bind("tcp://127.0.0.1:0");
    cleanups.push(() => router.close());
    router.onMessage((frames) => {
      const r = parseReplayRequest(frames);
      if ("start" in r) opts.replay!(frames[0]!, r.start, router);
    });
  }
  const outbound = new RouterEventOutbound("127.0.0.1", 0, logger);
  cleanups.push(() => outbound[Symbol.asyncDispose]());
  const agent = new KvStateAgent({ maxSlots: 2, retentionMs: 1000, replayTimeoutMs: opts.replayTimeoutMs ?? 300, logger, hasher: createBlockHasher(), outbound, ...(opts.nowMs ? { nowMs: opts.nowMs } : {}) });
  cleanups.push(() => agent.close());
  agent.putSource("static:0", {
    cache_owner_id: owner, worker_id: "w", dp_rank: 0, block_size: 4, ingress_protocol: "vllm_residency_v1",
    raw_endpoint: rawEndpoint, raw_topic: "", incarnation: 0, ...(replayEndpoint ? { replay_endpoint: replayEndpoint } : {}),
  });
  const view = (): SlotView => agent.slotViews()[0]!;
  const publish = (seq: number) => pub.send([EMPTY, encodeSeq(BigInt(seq)), payload]);
  return { pub, agent, view, publish };
}

describe("AgentSlot", () => {
  test("replies far ahead of the repaired gap are dropped and counted and never extend the deadline: the repair ends and the slot resyncs", async () => {
    let flood: ReturnType<typeof setInterval> | undefined;
    cleanups.push(() => clearInterval(flood));
    const starts: bigint[] = [];
    const { pub, agent, view, publish } = await setup({
      replay: (identity, start, router) => {
        starts.push(start);
        if (start === 0n) {
          router.send(replayEndFrames(identity)); // the back-fill on attach: nothing buffered
          return;
        }
        // A hostile endpoint: a reply far past the gap every 20 ms, never an end marker.
        flood = setInterval(() => router.send(replayBatchFrames(identity, EMPTY, 1_000_000n, payload)), 20);
      },
      replayTimeoutMs: 300,
    });
    await pub.connected();
    await waitFor(() => !view().raw_replaying && view().connected);
    publish(0);
    await waitFor(() => view().raw_cursor === 0);
    publish(5); // gap 1..4: repair from 1
    await waitFor(() => view().raw_replay_out_of_range > 0);
    await waitFor(() => !view().raw_replaying, { timeoutMs: 2000 });
    expect(view()).toMatchObject({ raw_cursor: 5, raw_dropped_batches: 4, raw_batches_recovered: 0 });
    expect(agent.health().raw_replay_out_of_range_total).toBe(view().raw_replay_out_of_range);
    publish(6);
    await waitFor(() => view().raw_cursor === 6);
    const metrics = agent.metrics().find((m) => m.name === "kvcr_agent_raw_replay_out_of_range_total");
    expect(metrics?.samples[0]?.value).toBeGreaterThan(0);
    expect(starts[0]).toBe(0n); // the back-fill on attach asked for everything from seq 0
  });

  test("/v1/slots counts the router blocks present per tier", async () => {
    const { pub, view } = await setup({});
    await pub.connected();
    await waitFor(() => view().connected);
    const stored = (raw: bigint[], medium: string, parent: bigint | null = null) => ({
      type: "BlockStored" as const, blockHashes: raw, parentBlockHash: parent, tokenIds: raw.flatMap((h) => [1, 2, 3, Number(h)]), blockSize: 4, loraId: null, medium, loraName: null,
    });
    const batch = encodeBatch({ ts: 1, events: [stored([1n], "GPU"), stored([2n, 3n], "CPU"), stored([4n, 5n, 6n], "DISK")], dataParallelRank: 0 });
    pub.send([EMPTY, encodeSeq(0n), batch]);
    await waitFor(() => view().raw_cursor === 0);
    expect(view().blocks).toEqual({ device: 1, host: 2, disk: 3 });
  });

  test("connected follows the raw SUB's peer; last_batch_age_ms is null before the first batch, then the time since it", async () => {
    let now = 1_000;
    const { pub, view, publish } = await setup({ nowMs: () => now });
    expect(view()).toMatchObject({ connected: false, last_batch_age_ms: null, decode_errors: 0, oversize_payloads: 0, raw_cursor: -1 });
    await pub.connected();
    await waitFor(() => view().connected);
    expect(view().last_batch_age_ms).toBeNull();
    publish(0);
    await waitFor(() => view().raw_cursor === 0);
    now = 1_750;
    expect(view().last_batch_age_ms).toBe(750);
    pub.close();
    await waitFor(() => !view().connected);
  });
});
