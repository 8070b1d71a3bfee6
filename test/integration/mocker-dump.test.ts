// GET /v1/kv-dump on a live mocker: every resident block of a (worker, rank) as one raw payload
// (the live stream's encoding) with the raw seq it reflects; the intent advertises the URL.
import { describe, expect, test } from "bun:test";
import { openFileDiscoveryStore } from "../../src/discovery/file-store.ts";
import { keys } from "../../src/discovery/keys.ts";
import { decodeBatch } from "../../src/protocol/kv-events/index.ts";
import { DUMP_SEQ_HEADER } from "../../src/protocol/kv-events/state-dump.ts";
import type { AttachmentIntent } from "../../src/protocol/records.ts";
import { startMocker } from "../../src/roles/mocker/index.ts";
import { cleanupList, makeTempDir, waitFor, withTimeout } from "../harness.ts";
import { logger, mockerConfig } from "./mocker-kit.ts";

const cleanups = cleanupList();
const sorted = (xs: Iterable<bigint>) => [...xs].map(String).sort();

describe("mocker state dump", () => {
  test("answers each tier's resident blocks and the last published seq; the intent names the URL; bad queries 400/404", async () => {
    const tmp = await makeTempDir("kvcr-dump-");
    cleanups.push(() => tmp[Symbol.asyncDispose]());
    const store = await openFileDiscoveryStore({ dir: tmp.path, pollIntervalMs: 25, logger });
    cleanups.push(() => store.close());
    const m = await startMocker(
      mockerConfig([
        "--num-workers", "1", "--data-parallel-size", "2", "--block-size", "4", "--num-gpu-blocks-override", "8", "--num-host-blocks", "8", "--speedup-ratio", "0",
        "--model-name", "m", "--kv-state-agent", "--zmq-kv-events-ports", "0", "--kv-state-agent-raw-host", "127.0.0.1", "--kv-state-agent-cache-slot", "0",
        "--namespace", "dump", "--discovery-dir", tmp.path,
      ]),
      { logger, env: {}, discovery: store },
    );
    cleanups.push(() => m.close());
    await withTimeout(m.ready, 10_000, "mocker registration");

    const intents = (await store.list(keys.kindPrefix("dump", "intent"))).map((e) => e.value as AttachmentIntent).sort((a, b) => a.dp_rank - b.dp_rank);
    expect(intents.map((i) => i.state_dump_url)).toEqual([0, 1].map((r) => `${m.httpUrl}/v1/kv-dump?worker=0&dp_rank=${r}`));

    const empty = await fetch(intents[0]!.state_dump_url!);
    expect([empty.status, empty.headers.get(DUMP_SEQ_HEADER)]).toEqual([200, "-1"]);
    expect(decodeBatch(new Uint8Array(await empty.arrayBuffer())).events).toEqual([]);

    for (const [i, start] of [0, 100, 200, 0].entries()) {
      const res = await fetch(`${m.httpUrl}/v1/generate`, { method: "POST", body: JSON.stringify({ worker: 0, dp_rank: 0, token_ids: Array.from({ length: 18 }, (_, k) => start + k + i), max_tokens: 2 }) });
      await res.text();
    }
    const publisher = m.outlets[0]!.publishers[0]!;
    await waitFor(() => publisher.nextSeq > 0, { what: "batches published" });
    const res = await fetch(intents[0]!.state_dump_url!);
    expect(res.headers.get("content-type")).toBe("application/vnd.msgpack");
    const seq = Number(res.headers.get(DUMP_SEQ_HEADER));
    expect(seq).toBe(publisher.nextSeq - 1); // idle engine: nothing unpublished
    const batch = decodeBatch(new Uint8Array(await res.arrayBuffer()));
    expect(batch.dataParallelRank).toBe(0);
    const held = { device: new Set<bigint>(), host: new Set<bigint>() };
    for (const e of batch.events) {
      if (e.type === "BlockStored") for (const h of e.blockHashes) held[e.medium === "GPU" ? "device" : "host"].add(h);
      if (e.type === "BlockRemoved") for (const h of e.blockHashes) held.device.delete(h);
    }
    const resident = m.pool.ranks[0]![0]!.engine.inspect().resident;
    expect(sorted(held.device)).toEqual(sorted(resident.device));
    expect(sorted(held.host)).toEqual(sorted(resident.host));
    expect(resident.device.length + resident.host.length).toBeGreaterThan(0);

    expect((await fetch(`${m.httpUrl}/v1/kv-dump?worker=0`)).status).toBe(400);
    expect((await fetch(`${m.httpUrl}/v1/kv-dump?worker=3&dp_rank=0`)).status).toBe(404);
    expect((await fetch(`${m.httpUrl}/v1/kv-dump?worker=0&dp_rank=0`, { method: "POST" })).status).toBe(405);
  });
});
