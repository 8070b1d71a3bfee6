// An agent slot against a scripted publisher (PUB, replay ROUTER with a tiny buffer, HTTP state
// dump): what replay cannot rebuild comes back whole from the dump; payloads over the limit are
// dropped and counted and the slot resyncs instead of being quarantined; a publisher without a
// dump leaves the slot degraded and says so; counters never go down when a slot is freed.
import { describe, expect, test } from "bun:test";
import { createBlockHasher } from "../../src/lib/xxh3.ts";
import { DUMP_SEQ_HEADER } from "../../src/protocol/kv-events/state-dump.ts";
import { pack } from "../../src/protocol/msgpack.ts";
import { encodeBatch, encodeSeq, parseReplayRequest, replayBatchFrames, replayEndFrames, type VllmKvEvent } from "../../src/protocol/kv-events/index.ts";
import { KvStateAgent, type SlotView } from "../../src/roles/agent/agent.ts";
import { RouterEventOutbound } from "../../src/roles/agent/outbound.ts";
import { ReplayBuffer } from "../../src/roles/mocker/replay-buffer.ts";
import { serveHttp } from "../../src/transport/http/server.ts";
import { PubSocket, RouterSocket } from "../../src/transport/zmtp/index.ts";
import { cleanupList, waitFor } from "../harness.ts";
import { logger } from "./mocker-kit.ts";

const cleanups = cleanupList();

const OWNER = `${"ab".repeat(16)}:${"cd".repeat(16)}/${"0".repeat(16)}/${"0".repeat(31)}1`;
const BLOCK = 4;
const MiB = 1024 * 1024;
const EMPTY = new Uint8Array(0);

/** A raw publisher storing one new block per batch, chained on the previous one. */
class ScriptedPublisher {
  readonly pub = new PubSocket({ logger, maxMessageBytes: 64 * MiB });
  readonly router = new RouterSocket({ logger, sendHighWaterMark: 0 });
  readonly rawEndpoint: string;
  readonly replayEndpoint: string;
  readonly dumpUrl: string;
  readonly buffer: ReplayBuffer;
  /** Raw hashes of the blocks stored so far, in order. */
  readonly blocks: bigint[] = [];
  seq = 0;
  /** Replaces the replay answer (e.g. a far-ahead seq). */
  replay: ((identity: Uint8Array, start: bigint) => void) | undefined;
  dumps = 0;

  constructor(replayCapacity: number) {
    this.buffer = new ReplayBuffer(replayCapacity);
    this.rawEndpoint = this.pub.bind("tcp://127.0.0.1:0");
    this.replayEndpoint = this.router.bind("tcp://127.0.0.1:0");
    this.router.onMessage((frames) => {
      const r = parseReplayRequest(frames);
      if (!("start" in r)) return;
      if (this.replay) return this.replay(frames[0]!, r.start);
      for (const [seq, payload] of this.buffer.from(r.start)) this.router.send(replayBatchFrames(frames[0]!, EMPTY, seq, payload));
      this.router.send(replayEndFrames(frames[0]!));
    });
    const http = serveHttp({
      host: "127.0.0.1",
      port: 0,
      fetch: async () => {
        this.dumps++;
        const events = this.blocks.map((h, i) => stored(h, i));
        return new Response(encodeBatch({ ts: 1, events, dataParallelRank: 0 }), { headers: { [DUMP_SEQ_HEADER]: String(this.seq - 1) } });
      },
    });
    this.dumpUrl = `${http.url}/v1/kv-dump?worker=0&dp_rank=0`;
    cleanups.push(() => http.stop(true), () => this.pub.close(), () => this.router.close());
  }

  /**
   * Publishes the next block; `padBytes` adds an unknown key of that many bytes (decoders skip it);
   * `live: false` keeps it in the replay buffer only (as if dropped at the subscriber's HWM).
   */
  storeNext(padBytes = 0, live = true): void {
    const i = this.blocks.length;
    const h = BigInt(i + 1) * 1_000_003n;
    this.blocks.push(h);
    const payload = padBytes > 0 ? padded(stored(h, i), padBytes) : encodeBatch({ ts: 1, events: [stored(h, i)], dataParallelRank: 0 });
    this.send(payload, live);
  }

  send(payload: Uint8Array, live = true): void {
    const seq = BigInt(this.seq++);
    if (live) this.pub.send([EMPTY, encodeSeq(seq), payload]);
    this.buffer.push(seq, payload);
  }

  /** The router hashes an agent must hold: the chain over every block's own tokens. */
  expectedSeqHashes(): string[] {
    const tokens = Uint32Array.from(this.blocks.flatMap((_, i) => tokensOf(i)));
    return [...createBlockHasher().hashBlocks(tokens, BLOCK).sequence].map(String).sort();
  }

  stored = stored;
}

const tokensOf = (i: number) => [i * 4 + 1, i * 4 + 2, i * 4 + 3, i * 4 + 4];
function stored(h: bigint, i: number): VllmKvEvent {
  return { type: "BlockStored", blockHashes: [h], parentBlockHash: i === 0 ? null : BigInt(i) * 1_000_003n, tokenIds: tokensOf(i), blockSize: BLOCK, loraId: null, medium: "GPU", loraName: null };
}

/** The same event with an unknown key holding `bytes` bytes: a valid payload of that size. */
function padded(e: VllmKvEvent, bytes: number): Uint8Array {
  const s = e as Extract<VllmKvEvent, { type: "BlockStored" }>;
  const event = { type: "BlockStored", block_hashes: s.blockHashes, parent_block_hash: s.parentBlockHash, token_ids: s.tokenIds, block_size: BLOCK, lora_id: null, medium: "GPU", lora_name: null, padding: new Uint8Array(bytes) };
  return pack([1.5, [event], 0]);
}

function startAgent(p: ScriptedPublisher, opts: { dump?: boolean; replay?: boolean; maxPayloadBytes?: number } = {}) {
  const outbound = new RouterEventOutbound("127.0.0.1", 0, logger);
  cleanups.push(() => outbound[Symbol.asyncDispose]());
  const agent = new KvStateAgent({ maxSlots: 2, retentionMs: 50, replayTimeoutMs: 2000, logger, hasher: createBlockHasher(), outbound, ...(opts.maxPayloadBytes ? { maxPayloadBytes: opts.maxPayloadBytes } : {}) });
  cleanups.push(() => agent.close());
  agent.putSource("static:0", {
    cache_owner_id: OWNER, worker_id: "w", dp_rank: 0, block_size: BLOCK, ingress_protocol: "vllm_residency_v1", raw_endpoint: p.rawEndpoint, raw_topic: "", incarnation: 0,
    ...(opts.replay === false ? {} : { replay_endpoint: p.replayEndpoint }),
    ...(opts.dump === false ? {} : { state_dump_url: p.dumpUrl }),
  });
  const view = (): SlotView => agent.slotViews()[0]!;
  const held = () => (agent.snapshot().sources[0]?.tiers.device ?? []).map((b) => b.seq_hash).sort();
  return { agent, view, held };
}

describe("agent slot resync", () => {
  test("replay window exceeded: the rebuilt slot holds every resident block (from the state dump), then follows live", async () => {
    const p = new ScriptedPublisher(4);
    for (let i = 0; i < 20; i++) p.storeNext(); // before the agent: the replay buffer holds the last 4 only
    const { view, held } = startAgent(p);
    await waitFor(() => view().state_dumps_applied >= 1 && !view().degraded, { what: "the state dump applied" });
    expect(view().raw_dropped_batches).toBeGreaterThan(0); // the replay did start past seq 0
    await waitFor(() => view().connected, { what: "the raw SUB connected" });
    p.storeNext();
    await waitFor(() => view().raw_cursor === 20, { what: "the live batch after the dump applied" });
    expect(held()).toEqual(p.expectedSeqHashes());
    expect(view().orphan_stores).toBe(0);
  });

  test("more batches lost since attach than the replay buffer holds: the slot rebuilds every resident block from the dump", async () => {
    const p = new ScriptedPublisher(4);
    const { view, held } = startAgent(p);
    await waitFor(() => view().connected && view().raw_cursor === -1 && !view().raw_replaying && !view().degraded, { what: "the slot attached" });
    p.storeNext();
    await waitFor(() => view().raw_cursor === 0, { what: "the first batch" });
    for (let i = 0; i < 10; i++) p.storeNext(0, false); // never reach the agent live; the buffer keeps the last 4
    p.storeNext();
    await waitFor(() => view().raw_cursor === 11 && !view().degraded && view().state_dumps_applied >= 1, { what: "the gap rebuilt from the dump" });
    expect(view().raw_gaps).toBe(1);
    expect(held()).toEqual(p.expectedSeqHashes());
  });

  test("a 9 MiB payload is taken; a 20 MiB one is dropped and counted, and the slot resyncs whole instead of being quarantined", async () => {
    const p = new ScriptedPublisher(100);
    const { agent, view, held } = startAgent(p);
    await waitFor(() => view().connected && !view().raw_replaying, { what: "the slot attached and back-filled" });
    p.storeNext();
    p.storeNext(9 * MiB);
    await waitFor(() => view().raw_cursor === 1, { what: "the 9 MiB batch applied" });
    expect(view()).toMatchObject({ state: "active", degraded: false, oversize_payloads: 0 });
    p.storeNext(20 * MiB);
    p.storeNext();
    await waitFor(() => view().oversize_payloads >= 1 && view().raw_cursor === 3 && !view().degraded, { what: "the 20 MiB batch dropped and the slot rebuilt", timeoutMs: 10_000 });
    expect(view().state).toBe("active");
    expect(held()).toEqual(p.expectedSeqHashes());
    expect(agent.health()).toMatchObject({ status: "healthy", oversize_payloads_total: view().oversize_payloads });
  });

  test("a message far over the socket's limit (the SUB drops the connection) is counted lost and rebuilt from the dump, with no later batch needed", async () => {
    const p = new ScriptedPublisher(100);
    const { view, held } = startAgent(p, { maxPayloadBytes: 64 * 1024 });
    await waitFor(() => view().connected && !view().raw_replaying, { what: "the slot attached and back-filled" });
    p.storeNext();
    await waitFor(() => view().raw_cursor === 0, { what: "the first batch" });
    p.storeNext(1 * MiB); // over 2 × 64 KiB + 64 KiB: never reaches the slot as a message
    await waitFor(() => view().oversize_payloads >= 1 && view().state_dumps_applied >= 1 && !view().degraded && view().raw_cursor === 1, { what: "the lost batch rebuilt from the dump", timeoutMs: 10_000 });
    expect(held()).toEqual(p.expectedSeqHashes());
  });

  test("a replay reply with a far-ahead seq is dropped and counted; the gap it left is rebuilt from the dump", async () => {
    const p = new ScriptedPublisher(100);
    const { view, held } = startAgent(p);
    await waitFor(() => view().connected && !view().raw_replaying && view().raw_cursor === -1, { what: "the slot attached and back-filled" });
    p.storeNext();
    await waitFor(() => view().raw_cursor === 0, { what: "the first batch" });
    p.replay = (identity) => {
      p.router.send(replayBatchFrames(identity, EMPTY, 9_000_000n, encodeBatch({ ts: 1, events: [], dataParallelRank: 0 })));
      p.router.send(replayEndFrames(identity));
    };
    p.seq += 2; // a gap the replay endpoint answers far past
    p.storeNext();
    await waitFor(() => view().state_dumps_applied >= 1 && !view().degraded && view().raw_cursor === 3, { what: "the state dump applied" });
    expect(view().raw_replay_out_of_range).toBe(1);
    p.storeNext();
    await waitFor(() => view().raw_cursor === 4, { what: "live after the dump" });
    expect(held()).toEqual(p.expectedSeqHashes());
  });

  test("a publisher without a state dump: after a loss the slot is degraded (cleared, filling from live) and says so", async () => {
    const p = new ScriptedPublisher(100);
    const { agent, view, held } = startAgent(p, { dump: false, replay: false });
    await waitFor(() => view().connected, { what: "the raw SUB connected" });
    p.storeNext();
    await waitFor(() => view().raw_cursor === 0, { what: "the first batch" });
    expect(held()).toEqual(p.expectedSeqHashes());
    p.seq += 3; // three batches never sent: a gap nothing can fill
    p.storeNext();
    await waitFor(() => view().degraded, { what: "the slot degraded" });
    expect(view().degraded_reason).toContain("serves no state dump");
    expect(agent.health()).toMatchObject({ healthy: true, status: "degraded", slots: { degraded: 1 } });
    // Cleared: the block before the gap is gone, and the one after it chains on it (an orphan).
    expect(held()).toEqual([]);
    // Filling from live: a new chain's root block is held again.
    const root: VllmKvEvent = { type: "BlockStored", blockHashes: [7n], parentBlockHash: null, tokenIds: [9, 9, 9, 9], blockSize: BLOCK, loraId: null, medium: "GPU", loraName: null };
    p.send(encodeBatch({ ts: 1, events: [root], dataParallelRank: 0 }));
    const rootHash = String(createBlockHasher().hashBlocks([9, 9, 9, 9], BLOCK).sequence[0]!);
    await waitFor(() => held().length > 0, { what: "the new root block held" });
    expect(held()).toEqual([rootHash]);
    expect(view().degraded).toBe(true);
  });

  test("counters of a freed slot stay in the totals", async () => {
    const p = new ScriptedPublisher(100);
    const { agent, view } = startAgent(p, { replay: false });
    await waitFor(() => view().state_dumps_applied === 1, { what: "the attach dump" });
    p.storeNext();
    p.seq += 2;
    p.storeNext();
    await waitFor(() => view().state_dumps_applied === 2 && view().raw_gaps === 1, { what: "the gap repaired by a dump" });
    const total = (name: string) => agent.metrics().find((m) => m.name === name)!.samples[0]!.value;
    const before = { gaps: total("kvcr_agent_raw_gaps_total"), dumps: total("kvcr_agent_state_dumps_total"), batches: total("kvcr_agent_raw_batches_total") };
    expect(before.gaps).toBe(1);
    agent.removeSource("static:0");
    await waitFor(() => agent.slotViews().length === 0, { what: "the slot freed after retention" });
    expect({ gaps: total("kvcr_agent_raw_gaps_total"), dumps: total("kvcr_agent_state_dumps_total"), batches: total("kvcr_agent_raw_batches_total") }).toEqual(before);
    expect(agent.health().raw_gaps_total).toBe(1);
  });
});
