// The agent keeps adapters apart: a BlockStored naming lora_name is normalized with the adapter's
// seed (the router's hashes for it, the independent vectors' rule), through both decode paths;
// one naming an adapter only by lora_id cannot be hashed as the router does and is refused.
import { describe, expect, test } from "bun:test";
import vectors from "../../../test/fixtures/lora-vectors.json";
import { createBlockHasher } from "../../lib/xxh3.ts";
import { decodeFlat, FlatBatch, flatFromBatch } from "../../protocol/kv-events/flat-decode.ts";
import { encodeBatch, type BlockStored, type VllmKvEventBatch } from "../../protocol/kv-events/index.ts";
import type { RouterEvent } from "../../protocol/router-events.ts";
import { SlotResidency } from "./slot-residency.ts";

function residency() {
  const events: RouterEvent[] = [];
  const r = new SlotResidency({ cacheOwnerId: "owner" }, createBlockHasher(), (e) => events.push(e));
  return { r, events };
}
const storedOf = (c: (typeof vectors.cases)[number], raw: bigint[], loraId: number | null = null, loraName = c.lora_name): BlockStored => ({
  type: "BlockStored",
  blockHashes: raw,
  parentBlockHash: null,
  tokenIds: c.tokens,
  blockSize: c.block_size,
  loraId,
  medium: "GPU",
  loraName,
});

describe("agent normalization under LoRA adapters", () => {
  for (const path of ["flat decode", "decoded batch"] as const) {
    test(`router hashes equal the vectors for every case (${path})`, () => {
      for (const c of vectors.cases) {
        const { r, events } = residency();
        const raw = c.local_hashes.map((_, i) => BigInt(i + 1));
        const batch: VllmKvEventBatch = { ts: 0, events: [storedOf(c, raw, c.lora_name === null ? null : 7)], dataParallelRank: 0 };
        const f = new FlatBatch();
        if (path === "flat decode") expect(decodeFlat(encodeBatch(batch), f)).toBe(true);
        else flatFromBatch(batch, f);
        r.applyBatch(f);
        expect(events.flatMap((e) => (e.kind === "stored" ? e.blocks.map((b) => b.seqHash.toString()) : []))).toEqual(c.sequence_hashes);
        expect(events.flatMap((e) => (e.kind === "stored" ? e.blocks.map((b) => b.localHash.toString()) : []))).toEqual(c.local_hashes);
      }
    });
  }

  test("the same tokens under two adapters become distinct router blocks", () => {
    const { r } = residency();
    const [a, b] = [vectors.cases[1]!, vectors.cases[2]!];
    const f = new FlatBatch();
    flatFromBatch({ ts: 0, events: [storedOf(a, [1n, 2n]), storedOf(b, [3n, 4n])], dataParallelRank: 0 }, f);
    r.applyBatch(f);
    expect(r.snapshot().device.map((x) => x.seq_hash).sort()).toEqual([...a.sequence_hashes, ...b.sequence_hashes].sort());
  });

  test("an adapter named only by lora_id is refused as malformed, never indexed as the base model's", () => {
    const { r, events } = residency();
    const f = new FlatBatch();
    expect(decodeFlat(encodeBatch({ ts: 0, events: [storedOf(vectors.cases[0]!, [1n, 2n], 5, null)], dataParallelRank: 0 }), f)).toBe(true);
    r.applyBatch(f);
    expect(events).toEqual([]);
    expect(r.counters.malformedEvents).toBe(1);
  });
});
