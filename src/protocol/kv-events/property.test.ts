// Property tests of the KV-event codec: round trips, canonical bytes, and agreement with an
// independent msgpack encoder (msgpackr) writing the map and the positional event encodings.
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { pack } from "../msgpack.ts";
import { vllmKvEventBatch } from "../../../test/arbitraries/kv-events.ts";
import { decodeBatch, encodeBatch } from "./index.ts";
import type { VllmKvEvent, VllmKvEventBatch } from "./index.ts";

// msgpackr writes ints above 2^32 as float64 and small bigints as int64: its choices differ from
// msgspec's, so the oracle batches keep ints in u32 range and extra_keys to strings.
// It also writes ts = -0 as the int 0.
const simpleBatch = vllmKvEventBatch({ maxInt: 0xffff_ffff, extraTuple: fc.array(fc.string({ maxLength: 8 }), { maxLength: 3 }) })
  .map((b) => (Object.is(b.ts, -0) ? { ...b, ts: 0 } : b));

function asMapEvent(e: VllmKvEvent): Record<string, unknown> {
  switch (e.type) {
    case "BlockStored":
      return dropUndefined({
        type: e.type, block_hashes: e.blockHashes, parent_block_hash: e.parentBlockHash, token_ids: e.tokenIds,
        block_size: e.blockSize, lora_id: e.loraId, medium: e.medium, lora_name: e.loraName,
        extra_keys: e.extraKeys, group_idx: e.groupIdx, kv_cache_spec_kind: e.kvCacheSpecKind,
        kv_cache_spec_sliding_window: e.kvCacheSpecSlidingWindow, locality: e.locality, ownership: e.ownership,
        session_id: e.sessionId,
      });
    case "BlockRemoved":
      return dropUndefined({ type: e.type, block_hashes: e.blockHashes, medium: e.medium, group_idx: e.groupIdx, locality: e.locality, ownership: e.ownership });
    case "AllBlocksCleared":
      return { type: e.type };
  }
}

/** vLLM's array_like form: tag then fields in order, absent optionals as nil, trailing ones cut. */
function asPositionalEvent(e: VllmKvEvent): unknown[] {
  const fields =
    e.type === "BlockStored"
      ? [e.blockHashes, e.parentBlockHash, e.tokenIds, e.blockSize, e.loraId, e.medium, e.loraName, e.extraKeys,
         e.groupIdx, e.kvCacheSpecKind, e.kvCacheSpecSlidingWindow, e.locality, e.ownership, e.sessionId]
      : e.type === "BlockRemoved"
        ? [e.blockHashes, e.medium, e.groupIdx, e.locality, e.ownership]
        : [];
  const required = e.type === "BlockStored" ? 7 : e.type === "BlockRemoved" ? 2 : 0;
  let n = fields.length;
  while (n > required && fields[n - 1] === undefined) n--;
  return [e.type, ...fields.slice(0, n).map((f) => (f === undefined ? null : f))];
}

function dropUndefined(o: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));
}

const outer = (b: VllmKvEventBatch, events: unknown[]) => (b.dataParallelRank === null ? [b.ts, events] : [b.ts, events, b.dataParallelRank]);

describe("KV-event codec properties (fast-check, bounded)", () => {
  test("decode(encode(x)) = x", () => {
    fc.assert(
      fc.property(vllmKvEventBatch(), (batch) => {
        expect(decodeBatch(encodeBatch(batch))).toEqual(batch);
      }),
      { numRuns: 400 },
    );
  });

  test("encoding is canonical: encode(decode(encode(x))) has the same bytes", () => {
    fc.assert(
      fc.property(vllmKvEventBatch(), (batch) => {
        const bytes = encodeBatch(batch);
        expect(encodeBatch(decodeBatch(bytes))).toEqual(bytes);
      }),
      { numRuns: 200 },
    );
  });

  test("an independent encoder's map encoding decodes to x", () => {
    fc.assert(
      fc.property(simpleBatch, (batch) => {
        expect(decodeBatch(pack(outer(batch, batch.events.map(asMapEvent))))).toEqual(batch);
      }),
      { numRuns: 200 },
    );
  });

  test("the positional (array_like) encoding decodes to x", () => {
    fc.assert(
      fc.property(simpleBatch, (batch) => {
        expect(decodeBatch(pack(outer(batch, batch.events.map(asPositionalEvent))))).toEqual(batch);
      }),
      { numRuns: 200 },
    );
  });
});
