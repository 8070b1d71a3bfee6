// A whole mocker (2 workers × 2 ranks, state-agent mode) on loopback: requests that share prefixes
// go in over HTTP; the raw vLLM-format streams are read by our SUB and by real libzmq (Node), and
// replayed through the ROUTER; discovery holds the intents; a restart reproduces the identities.
import { describe, expect, test } from "bun:test";
import { keys } from "../../src/discovery/keys.ts";
import { openFileDiscoveryStore } from "../../src/discovery/file-store.ts";
import { createBlockHasher } from "../../src/lib/xxh3.ts";
import { decodeBatch, decodeSeq, encodeSeq, REPLAY_END_SEQ, type BlockStored, type VllmKvEventBatch } from "../../src/protocol/kv-events/index.ts";
import { decodeRouterEvents } from "../../src/protocol/router-events.ts";
import type { AttachmentIntent, WorkerRecord } from "../../src/protocol/records.ts";
import { startMocker, type MockerHandle } from "../../src/roles/mocker/index.ts";
import { DealerSocket, SubSocket } from "../../src/transport/zmtp/index.ts";
import { cleanupList, makeTempDir, waitFor, withTimeout } from "../harness.ts";
import { logger, mockerConfig } from "./mocker-kit.ts";
import { text, ZmqPeer, type FrameReport } from "./zmq-peer-client.ts";

const cleanups = cleanupList();

interface Generated {
  tokens: number[];
  summary: Record<string, unknown>;
}

async function generate(m: MockerHandle, body: Record<string, unknown>): Promise<Generated> {
  const res = await fetch(`${m.httpUrl}/v1/generate`, { method: "POST", body: JSON.stringify(body) });
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toBe("application/x-ndjson");
  const lines = (await res.text()).trimEnd().split("\n").map((l) => JSON.parse(l) as Record<string, unknown>);
  return { tokens: lines.slice(0, -1).map((l) => l.token_id as number), summary: lines.at(-1)! };
}

/** Every engine has finished its requests and transfers, so publish counters are final. */
function quiescent(m: MockerHandle): boolean {
  return m.pool.inFlight === 0 && m.pool.ranks.flat().every((r) => !r.hasWork());
}

interface Received {
  topic: string;
  seq: bigint;
  payload: Uint8Array;
}

const hasher = createBlockHasher();

/** block_hashes of a stored event must be the chain of its own token ids from its parent. */
function selfConsistent(e: BlockStored): boolean {
  const h = hasher.hashBlocks(Uint32Array.from(e.tokenIds), e.blockSize, e.parentBlockHash ?? undefined);
  return [...h.sequence].every((x, i) => x === e.blockHashes[i]);
}

describe("mocker in state-agent mode, 2 workers × 2 ranks", () => {
  test("raw streams, replay, libzmq, discovery intents, and durable identities across a restart", async () => {
    await using dir = await makeTempDir("kvcr-mocker-");
    const argv = [
      "--num-workers", "2", "--data-parallel-size", "2", "--block-size", "4", "--num-gpu-blocks-override", "8",
      "--num-host-blocks", "64", "--speedup-ratio", "0", "--zmq-kv-events-ports", "0,0", "--zmq-replay-ports", "0,0",
      "--kv-state-agent", "--kv-state-agent-raw-host", "127.0.0.1", "--kv-state-agent-cache-slot", "10",
      "--discovery-dir", dir.path, "--namespace", "itest",
    ];
    const config = mockerConfig(argv);
    const mocker = await startMocker(config, { logger, env: {} });
    cleanups.push(() => mocker.close());
    await withTimeout(mocker.ready, 10_000, "mocker registration");
    expect((await fetch(`${mocker.httpUrl}/health`)).status).toBe(200);

    // Our SUB on every (worker, rank) raw PUB, filtered by the worker's raw topic.
    const received = new Map<string, Received[]>();
    const publishers = mocker.outlets.flatMap((o, w) => o.publishers.map((p, r) => ({ w, r, p })));
    expect(publishers).toHaveLength(4);
    for (const { w, r, p } of publishers) {
      const sub = new SubSocket();
      cleanups.push(() => sub.close());
      const list: Received[] = [];
      received.set(`${w}/${r}`, list);
      sub.onMessage((f) => list.push({ topic: new TextDecoder().decode(f[0]), seq: decodeSeq(f[1]!), payload: f[2]! }));
      sub.subscribe(mocker.workers[w]!.rawTopic);
      sub.connect(p.endpoint);
    }
    // Real libzmq subscribes to worker 1 rank 1.
    const peer = await ZmqPeer.start();
    cleanups.push(() => peer.kill());
    const libzmqTarget = publishers[3]!;
    await peer.socket("sub", "sub");
    await peer.subscribe("sub", text(mocker.workers[1]!.rawTopic));
    await peer.connect("sub", libzmqTarget.p.endpoint);
    await waitFor(() => publishers.every(({ p }) => p.subscriberCount() >= 1) && libzmqTarget.p.subscriberCount() >= 2, { timeoutMs: 10_000, what: "subscriptions to reach every PUB" });

    // Requests sharing a prefix, more distinct prompts than G1 holds, on every (worker, rank).
    const prefix = [101, 102, 103, 104, 105, 106, 107, 108];
    for (const { w, r } of publishers) {
      for (let i = 0; i < 6; i++) {
        const g = await generate(mocker, { worker: w, dp_rank: r, token_ids: [...prefix, 1000 + i, 1001 + i, 1002 + i, 1003 + i, 7], max_tokens: 3 });
        expect(g.tokens).toHaveLength(3);
        expect(g.summary).toMatchObject({ finish_reason: "length", prompt_tokens: 13, completion_tokens: 3 });
        if (i > 0) expect(g.summary.cached_tokens as number).toBeGreaterThanOrEqual(8); // the shared prefix
      }
    }
    await waitFor(() => quiescent(mocker), { timeoutMs: 10_000, what: "engines to finish and transfers to land" });
    await waitFor(
      () => publishers.every(({ w, r, p }) => received.get(`${w}/${r}`)!.length === p.stats().batchesPublished),
      { timeoutMs: 10_000, what: "every published batch at our subscribers" },
    );

    // /metrics reports the same counts, per worker and rank, and no drops.
    const metrics = await (await fetch(`${mocker.httpUrl}/metrics`)).text();
    for (const { w, r } of publishers) {
      expect(metrics).toContain(`kvcr_mocker_raw_batches_published_total{worker="${mocker.workers[w]!.workerId}",dp_rank="${r}"} ${received.get(`${w}/${r}`)!.length}\n`);
      expect(metrics).toContain(`kvcr_mocker_raw_batches_dropped_total{worker="${mocker.workers[w]!.workerId}",dp_rank="${r}"} 0\n`);
      // G2 traffic: the host blocks stored on the raw stream, counted by the engine.
      const hostStored = received.get(`${w}/${r}`)!.flatMap((m) => decodeBatch(m.payload).events).filter((e): e is BlockStored => e.type === "BlockStored" && e.medium === "CPU_PINNED");
      expect(hostStored.length).toBeGreaterThan(0);
      expect(metrics).toContain(`kvcr_mocker_host_blocks_stored_total{worker="${mocker.workers[w]!.workerId}",dp_rank="${r}"} ${hostStored.reduce((n, e) => n + e.blockHashes.length, 0)}\n`);
    }

    const all: { w: number; r: number; batch: VllmKvEventBatch }[] = [];
    for (const { w, r, p } of publishers) {
      const got = received.get(`${w}/${r}`)!;
      expect(got.length).toBeGreaterThan(0);
      expect(p.stats().batchesDroppedByHwm).toBe(0);
      expect(got.map((m) => m.seq)).toEqual(got.map((_, i) => BigInt(i))); // contiguous from 0
      for (const m of got) {
        expect(m.topic).toBe(mocker.workers[w]!.rawTopic);
        const batch = decodeBatch(m.payload);
        expect(batch.dataParallelRank).toBe(r);
        all.push({ w, r, batch });
      }
    }
    const events = all.flatMap((x) => x.batch.events);
    const g1Stores = events.filter((e): e is BlockStored => e.type === "BlockStored" && e.medium === "GPU");
    const g2Stores = events.filter((e): e is BlockStored => e.type === "BlockStored" && e.medium === "CPU_PINNED");
    const g1Removes = events.filter((e) => e.type === "BlockRemoved" && e.medium === "GPU");
    expect(g1Stores.length).toBeGreaterThan(0);
    expect(g2Stores.length).toBeGreaterThan(0);
    expect(g1Removes.length).toBeGreaterThan(0); // G1 had to evict
    expect(g1Stores.every((e) => e.ownership === undefined)).toBe(true); // framework-owned
    expect(g2Stores.every((e) => e.ownership === "kvcr")).toBe(true);
    expect(g1Removes.every((e) => e.type === "BlockRemoved" && e.ownership === undefined)).toBe(true);
    // Token ids are the blocks' own (G2 ones recovered): they hash to the advertised block hashes.
    for (const e of [...g1Stores, ...g2Stores]) {
      expect(e.tokenIds.length).toBe(e.blockHashes.length * 4);
      expect(selfConsistent(e)).toBe(true);
    }

    // Replay from seq 0 returns byte-identical payloads and the end marker.
    const target = publishers[2]!;
    const dealer = new DealerSocket();
    cleanups.push(() => dealer.close());
    dealer.connect(target.p.replayEndpoint!);
    dealer.send(["", encodeSeq(0n)]);
    const live = received.get(`${target.w}/${target.r}`)!;
    for (const m of live) {
      const f = await withTimeout(dealer.receive(), 5000, `replayed batch ${m.seq}`);
      expect(f.length).toBe(4);
      expect(new TextDecoder().decode(f[1])).toBe(m.topic);
      expect(decodeSeq(f[2]!)).toBe(m.seq);
      expect(f[3]).toEqual(m.payload);
    }
    const end = await withTimeout(dealer.receive(), 5000, "replay end marker");
    expect(end.map((f) => f.length)).toEqual([0, 0, 8, 0]);
    expect(decodeSeq(end[2]!)).toBe(REPLAY_END_SEQ);

    // libzmq got the same stream as our SUB, in order.
    const b = (f: FrameReport) => new Uint8Array(Buffer.from((f as { b64: string }).b64, "base64"));
    for (const m of received.get(`${libzmqTarget.w}/${libzmqTarget.r}`)!) {
      const z = await peer.nextMessage("sub", 5000);
      expect(new TextDecoder().decode(b(z[0]!))).toBe(m.topic);
      expect(decodeSeq(b(z[1]!))).toBe(m.seq);
      expect(b(z[2]!)).toEqual(new Uint8Array(m.payload));
    }

    // Discovery: one intent per (worker, rank), owning slots 10..13; records in state-agent mode.
    await using store = await openFileDiscoveryStore({ dir: dir.path, logger });
    const intents = (await store.list(keys.kindPrefix("itest", "intent"))).map((e) => e.value as AttachmentIntent);
    expect(intents.map((i) => i.cache_owner_id.slice(-2)).sort()).toEqual(["0a", "0b", "0c", "0d"]);
    for (const i of intents) {
      const w = mocker.workers.find((x) => x.cacheOwnerIds.includes(i.cache_owner_id))!;
      expect(i).toMatchObject({ ingress_protocol: "vllm_residency_v1", block_size: 4, raw_topic: w.rawTopic, kv_state_endpoint: "itest/kv_state_agent/slot" });
      expect(i.dp_rank).toBe(w.cacheOwnerIds.indexOf(i.cache_owner_id));
      expect(i.raw_endpoint).toBe(`tcp://127.0.0.1:${mocker.endpoints[w.index]!.rawPorts[i.dp_rank]}`);
      expect(i.replay_endpoint).toBe(`tcp://127.0.0.1:${mocker.endpoints[w.index]!.replayPorts![i.dp_rank]}`);
    }
    const workers = (await store.list(keys.kindPrefix("itest", "worker"))).map((e) => e.value as WorkerRecord);
    expect(workers.map((w) => w.kv_event_source_mode)).toEqual(["state_agent_v2", "state_agent_v2"]);
    expect(workers.every((w) => w.router_events_endpoint === undefined)).toBe(true); // relay skipped

    // Shutdown withdraws intents and records; a restart with the same flags is the same owner.
    const before = mocker.workers.map((w) => [w.workerId, w.rawTopic, ...w.cacheOwnerIds]);
    await mocker.close();
    expect(await store.list(keys.namespacePrefix("itest"))).toEqual([]);
    const again = await startMocker(mockerConfig(argv), { logger, env: {} });
    cleanups.push(() => again.close());
    await withTimeout(again.ready, 10_000, "restarted mocker registration");
    expect(again.workers.map((w) => [w.workerId, w.rawTopic, ...w.cacheOwnerIds])).toEqual(before);
    const reIntents = (await store.list(keys.kindPrefix("itest", "intent"))).map((e) => (e.value as AttachmentIntent).cache_owner_id);
    expect(reIntents.sort()).toEqual(intents.map((i) => i.cache_owner_id).sort());
  }, 60_000);
});

describe("mocker in direct mode", () => {
  test("relays router events with local hashes on the stream its record advertises", async () => {
    await using dir = await makeTempDir("kvcr-mocker-");
    const mocker = await startMocker(mockerConfig(["--block-size", "4", "--speedup-ratio", "0", "--discovery-dir", dir.path, "--namespace", "direct"]), { logger, env: {} });
    cleanups.push(() => mocker.close());
    await withTimeout(mocker.ready, 10_000, "mocker registration");
    await using store = await openFileDiscoveryStore({ dir: dir.path, logger });
    const [record] = (await store.list(keys.kindPrefix("direct", "worker"))).map((e) => e.value as WorkerRecord);
    expect(record).toMatchObject({ kv_event_source_mode: "direct", raw_endpoints: [], block_size: 4, worker_id: mocker.workers[0]!.workerId });
    expect(record!.router_events_endpoint).toBe(mocker.endpoints[0]!.routerEventsEndpoint!);

    const sub = new SubSocket();
    cleanups.push(() => sub.close());
    const batches: Uint8Array[] = [];
    sub.onMessage((f) => batches.push(f[2]!));
    sub.subscribe("");
    sub.connect(record!.router_events_endpoint!);
    // Resend until a batch arrives (the SUB's subscription may reach the relay after the first
    // ones); every attempt's prompt is new, so every attempt stores new blocks.
    const prompts: number[][] = [];
    await waitFor(() => {
      if (batches.length === 0 && prompts.length < 200) {
        const k = prompts.length;
        prompts.push(Array.from({ length: 8 }, (_, i) => 1000 * k + i + 1));
        void generate(mocker, { worker: 0, token_ids: [...prompts[k]!, 0], max_tokens: 2 });
      }
      return batches.length > 0;
    }, { timeoutMs: 10_000, what: "a router-event batch" });
    const events = decodeRouterEvents(batches[0]!);
    const stored = events.find((e) => e.kind === "stored" && e.tier === "device")!;
    expect(stored.holder).toEqual({ workerId: mocker.workers[0]!.workerId, dpRank: 0 });
    // The relayed blocks are exactly one prompt's (sequence hash, local hash) pairs.
    const expected = prompts.map((p) => {
      const h = hasher.hashBlocks(p, 4);
      return [0, 1].map((b) => ({ seqHash: h.sequence[b]!, localHash: h.local[b]! }));
    });
    expect(expected).toContainEqual(stored.blocks.slice(0, 2));
    await waitFor(() => quiescent(mocker), { timeoutMs: 10_000, what: "engines to go idle" });
  }, 30_000);
});
