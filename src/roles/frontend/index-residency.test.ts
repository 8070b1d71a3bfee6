// `GET /v1/index`: the routing index in the residency shape — one holder per (worker, rank) with
// its worker's request URL, seq hashes as sorted decimal strings, local hashes "0" — valid against
// the shared schema, and 405 for another method.
import { describe, expect, test } from "bun:test";
import * as v from "valibot";
import { app, ndjsonWorker, routingState, workerRecord } from "../../../test/routing/fake-fleet.ts";
import { createBlockHasher } from "../../lib/xxh3.ts";
import { ResidencySchema, type Residency } from "../../protocol/residency.ts";
import type { RouterEvent } from "../../protocol/router-events.ts";

const BLOCK = 4;
const seq = createBlockHasher().hashBlocks(Array.from({ length: 6 * BLOCK }, (_, i) => 500 + i), BLOCK);

function stored(workerId: string, dpRank: number, tier: RouterEvent["tier"], from: number, to: number): RouterEvent {
  const blocks = [];
  for (let i = from; i < to; i++) blocks.push({ seqHash: seq.sequence[i]!, localHash: seq.local[i]! });
  return { holder: { workerId, dpRank }, tier, kind: "stored", blocks, parentHash: from > 0 ? seq.sequence[from - 1]! : null };
}

const sorted = (hs: ArrayLike<bigint>) => Array.from(hs).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)).map(String);

describe("GET /v1/index", () => {
  test("lists every (worker, rank) with its URL and its indexed blocks per tier", async () => {
    const state = routingState("kv");
    state.putWorker(workerRecord("w1", { data_parallel_size: 2, request_url: "http://127.0.0.1:7001/v1/generate" }));
    state.putWorker(workerRecord("w0", { request_url: "http://127.0.0.1:7000/v1/generate" }));
    state.apply([stored("w1", 1, "device", 0, 4), stored("w1", 1, "host", 0, 2), stored("w0", 0, "device", 0, 2)]);
    const res = await app(state, ndjsonWorker()).fetch(new Request("http://x/v1/index"));
    expect(res.status).toBe(200);
    const body = v.parse(ResidencySchema, await res.json()) as Residency;
    expect(body.sources.map((s) => [s.worker_id, s.dp_rank, s.url])).toEqual([
      ["w0", 0, "http://127.0.0.1:7000/v1/generate"],
      ["w1", 0, "http://127.0.0.1:7001/v1/generate"],
      ["w1", 1, "http://127.0.0.1:7001/v1/generate"],
    ]);
    const w1r1 = body.sources[2]!;
    expect(w1r1.tiers.device.map((b) => b.seq_hash)).toEqual(sorted(seq.sequence.slice(0, 4)));
    expect(w1r1.tiers.host.map((b) => b.seq_hash)).toEqual(sorted(seq.sequence.slice(0, 2)));
    expect(w1r1.tiers.device.every((b) => b.local_hash === "0")).toBe(true);
    expect(body.sources[1]!.tiers.device).toEqual([]);
  });

  test("another method gets 405", async () => {
    const res = await app(routingState("kv"), ndjsonWorker()).fetch(new Request("http://x/v1/index", { method: "POST" }));
    expect(res.status).toBe(405);
  });
});
