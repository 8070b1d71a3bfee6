// decodeFlat is the agent's fast path; decode.ts stays the definition of validity: on every input
// decodeFlat either declines (false) or yields exactly what decodeBatch + flatFromBatch yield.
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import vectors from "../../../test/fixtures/vectors.json";
import { vllmKvEventBatch } from "../../../test/arbitraries/kv-events.ts";
import { decodeFlat, FlatBatch, flatFromBatch } from "./flat-decode.ts";
import { pack } from "../msgpack.ts";
import { decodeBatch, encodeBatch } from "./index.ts";

function view(f: FlatBatch) {
  const events = [];
  for (let i = 0; i < f.count; i++) {
    const hs = f.hashStart[i]!;
    const words = Array.from(f.words.subarray(2 * hs, 2 * (hs + f.hashCount[i]!)));
    const pk = f.parent[i]!;
    events.push({
      kind: f.kind[i], medium: f.medium[i], ownership: f.ownership[i], blockSize: f.blockSize[i], words,
      parent: pk < 0 ? null : [f.words[2 * pk], f.words[2 * pk + 1]],
      tokens: Array.from(f.tokens.subarray(f.tokenStart[i]!, f.tokenStart[i]! + f.tokenCount[i]!)),
    });
  }
  return { ts: f.ts, rank: f.dataParallelRank, events };
}

/** What the fallback path gives, or "rejected". */
function reference(bytes: Uint8Array) {
  try {
    const f = new FlatBatch();
    flatFromBatch(decodeBatch(bytes), f);
    return view(f);
  } catch {
    return "rejected";
  }
}

let accepted = 0;
function agrees(bytes: Uint8Array): void {
  const f = new FlatBatch();
  if (!decodeFlat(bytes, f)) return;
  accepted++;
  expect(view(f)).toEqual(reference(bytes) as never);
}

describe("decodeFlat", () => {
  test("takes the golden vLLM batches and agrees with decodeBatch", () => {
    for (const w of vectors.wire_batches) {
      const bytes = Uint8Array.from(Buffer.from(w.hex, "hex"));
      const f = new FlatBatch();
      expect(decodeFlat(bytes, f)).toBe(true);
      expect(view(f)).toEqual(reference(bytes) as never);
    }
  });

  test("random batches (every optional field, hash forms via extremes): declines or agrees", () => {
    accepted = 0;
    fc.assert(fc.property(vllmKvEventBatch({ maxInt: 2 ** 31 - 1 }), (batch) => agrees(encodeBatch(batch))), { numRuns: 300 });
    expect(accepted).toBeGreaterThan(250); // the fast path is the one taken, not the fallback
  });

  test("mutated and truncated bytes: never accepts what decodeBatch rejects", () => {
    const golden = vectors.wire_batches.map((w) => Uint8Array.from(Buffer.from(w.hex, "hex")));
    fc.assert(
      fc.property(fc.constantFrom(...golden), fc.nat(), fc.integer({ min: 0, max: 255 }), fc.nat(), (bytes, at, byte, cut) => {
        const m = Uint8Array.from(bytes);
        m[at % m.length] = byte;
        agrees(m);
        agrees(m.subarray(0, cut % (m.length + 1)));
      }),
      { numRuns: 2000 },
    );
  });
});

describe("FlatBatch", () => {
  const hashOf = (f: FlatBatch, k: number) => BigInt(f.words[2 * k]!) | (BigInt(f.words[2 * k + 1]!) << 32n);
  const stored = (hashes: bigint[]) => ({ type: "BlockStored" as const, blockHashes: hashes, parentBlockHash: null, tokenIds: hashes.map((_, i) => i), blockSize: 1, loraId: null, medium: "GPU", loraName: null });

  test("a stored event of 300 hashes (past the first 256-hash buffer) keeps every hash, on both paths", () => {
    const hashes = Array.from({ length: 300 }, (_, i) => (1n << 40n) + BigInt(i) * 0x1_0000_0001n);
    const bytes = encodeBatch({ ts: 1, events: [stored(hashes)], dataParallelRank: 0 });
    for (const fill of [(f: FlatBatch) => expect(decodeFlat(bytes, f)).toBe(true), (f: FlatBatch) => flatFromBatch(decodeBatch(bytes), f)]) {
      const f = new FlatBatch();
      fill(f);
      expect(f.hashCount[0]).toBe(300);
      expect(Array.from({ length: 300 }, (_, k) => hashOf(f, f.hashStart[0]! + k))).toEqual(hashes);
    }
  });

  test("flatFromBatch refills a reused batch: only the new batch's events", () => {
    const f = new FlatBatch();
    flatFromBatch({ ts: 1, events: [stored([1n]), stored([2n])], dataParallelRank: 0 }, f);
    flatFromBatch({ ts: 2, events: [stored([3n])], dataParallelRank: 1 }, f);
    expect([f.count, f.ts, f.dataParallelRank, hashOf(f, f.hashStart[0]!)]).toEqual([1, 2, 1, 3n]);
  });

  test("a map-form event naming a field twice (its type too) is declined by both decoders", () => {
    const str = (s: string) => [0xa0 | s.length, ...new TextEncoder().encode(s)];
    const batchOf = (...fields: number[][]) => Uint8Array.from([0x93, 0x01, 0x91, 0x80 | fields.length, ...fields.flat(), 0x00]);
    const type = [...str("type"), ...str("BlockRemoved")];
    const hashes = [...str("block_hashes"), 0x91, 0x01];
    const once = batchOf(type, hashes);
    expect(decodeFlat(once, new FlatBatch())).toBe(true);
    expect(decodeBatch(once).events).toMatchObject([{ type: "BlockRemoved", blockHashes: [1n] }]);
    for (const twice of [batchOf(type, hashes, type), batchOf(type, hashes, hashes)]) {
      expect(decodeFlat(twice, new FlatBatch())).toBe(false);
      expect(() => decodeBatch(twice)).toThrow();
    }
  });

  test("a positional BlockStored with fewer than its 5 required fields is declined", () => {
    const f = new FlatBatch();
    expect(decodeFlat(pack([1, [["BlockStored", [1], null, [1, 2, 3, 4]]], 0]), f)).toBe(false);
    expect(decodeFlat(pack([1, [["BlockRemoved"]], 0]), f)).toBe(false);
  });
});
