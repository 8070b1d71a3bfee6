// Golden bytes of the two event encodings a publisher can write: vLLM's maps with
// hashes in their smallest int form (as msgspec), and vLLM 0.9.1–0.23's positional arrays
// (`--kv-events-encoding array`). The map hex below was written by msgpackr, a msgpack library
// independent of our writer, from the same values laid out as msgspec lays them out
// (one-off script: Packr({ useRecords: false, variableMapSize: true }), small hashes as numbers,
// hashes >= 2^63 as bigint, which msgpackr writes as uint64 `cf`). The array form is checked
// against @msgpack/msgpack, another independent writer, run on hand-written positional values
// (it writes a bigint ≥ 0 as uint64 `cf`, as msgspec writes from 2^32 on; msgpackr cannot), and
// read back with msgpackr, the project's reference decoder.
import { describe, expect, test } from "bun:test";
import { encode as independentEncode } from "@msgpack/msgpack";
import { unpack } from "../msgpack.ts";
import { decodeFlat, FlatBatch, flatFromBatch } from "./flat-decode.ts";
import { decodeBatch, encodeBatch } from "./index.ts";
import type { VllmKvEventBatch } from "./index.ts";

const toHex = (bytes: Uint8Array) => Buffer.from(bytes).toString("hex");
const H1 = 0xcb38e4d7fb2dca5cn;

const MAP_SMALL_HASHES: VllmKvEventBatch = {
  ts: 1700000002.5,
  dataParallelRank: 0,
  events: [
    {
      type: "BlockStored",
      blockHashes: [7n, 300n, 70000n],
      parentBlockHash: 200n,
      tokenIds: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12],
      blockSize: 4,
      loraId: null,
      medium: "CPU",
      loraName: null,
      extraKeys: [null, null, null],
      groupIdx: 0,
      kvCacheSpecKind: "full_attention",
    },
    { type: "BlockRemoved", blockHashes: [7n, H1], medium: "GPU", groupIdx: 0 },
  ],
};
const MAP_SMALL_HEX =
  "93cb41d954fc40a00000928ba474797065ab426c6f636b53746f726564ac626c6f636b5f6861736865739307cd012cce00011170b1706172656e745f626c6f636b5f68617368ccc8a9746f6b656e5f6964739c0102030405060708090a0b0caa626c6f636b5f73697a6504a76c6f72615f6964c0a66d656469756da3435055a96c6f72615f6e616d65c0aa65787472615f6b65797393c0c0c0a967726f75705f69647800b26b765f63616368655f737065635f6b696e64ae66756c6c5f617474656e74696f6e84a474797065ac426c6f636b52656d6f766564ac626c6f636b5f6861736865739207cfcb38e4d7fb2dca5ca66d656469756da3475055a967726f75705f6964780000";

describe("map encoding (vLLM's current form)", () => {
  test("hashes below 2^32 in their smallest int form, as msgspec writes them", () => {
    expect(toHex(encodeBatch(MAP_SMALL_HASHES))).toBe(MAP_SMALL_HEX);
    expect(decodeBatch(encodeBatch(MAP_SMALL_HASHES))).toEqual(MAP_SMALL_HASHES);
  });
});

// The positional form as vLLM 0.9.1–0.23 put it on the wire: msgspec writes every field of an
// array_like struct (omit_defaults has no effect there), so unset fields are nil, never cut off.
// Expected values are plain JS, encoded by @msgpack/msgpack: hashes below 2^32 as numbers (its
// smallest int forms, as msgspec writes a Python int), larger ones as bigint (`useBigInt64` writes
// them as uint64 `cf`, as msgspec does from 2^32 on; a number >= 2^32 would become a float there).
// Every ts is fractional, so it is written as float64 as msgspec writes a float.
const H2 = 0x100_0000_0000n; // 2^40: above u32, below 2^53, still `cf`

function independent(value: unknown): string {
  const hex = toHex(independentEncode(value, { useBigInt64: true, forceFloat32: false }));
  expect(hex.slice(2, 4)).toBe("cb"); // ts as float64
  return hex;
}

interface ArrayCase {
  name: string;
  batch: VllmKvEventBatch;
  /** `[ts, [event arrays], rank]` exactly as vLLM's msgspec laid it out. */
  wire: unknown[];
}

const ARRAY_CASES: ArrayCase[] = [
  {
    name: "a G1 store (null parent and LoRA fields), a removal with group_idx and a clear",
    batch: {
      ts: 1700000000.5,
      dataParallelRank: 0,
      events: [
        { type: "BlockStored", blockHashes: [H1, 300n], parentBlockHash: null, tokenIds: [1, 2, 3, 4, 5, 6, 7, 8], blockSize: 4, loraId: null, medium: "GPU", loraName: null, extraKeys: [null, null], groupIdx: 0, kvCacheSpecKind: "full_attention" },
        { type: "BlockRemoved", blockHashes: [300n], medium: "GPU", groupIdx: 0 },
        { type: "AllBlocksCleared" },
      ],
    },
    wire: [1700000000.5, [
      ["BlockStored", [H1, 300], null, [1, 2, 3, 4, 5, 6, 7, 8], 4, null, "GPU", null, [null, null], 0, "full_attention", null],
      ["BlockRemoved", [300], "GPU", 0],
      ["AllBlocksCleared"],
    ], 0],
  },
  {
    name: "a store with a non-null parent and no optional field, and a removal with group_idx null",
    batch: {
      ts: 1700000003.75,
      dataParallelRank: 2,
      events: [
        { type: "BlockStored", blockHashes: [7n, 70000n, H2], parentBlockHash: H1, tokenIds: [0, 127, 128, 65536, 9, 10], blockSize: 2, loraId: null, medium: "GPU", loraName: null },
        { type: "BlockRemoved", blockHashes: [7n, H2], medium: "GPU" },
      ],
    },
    wire: [1700000003.75, [
      ["BlockStored", [7, 70000, H2], H1, [0, 127, 128, 65536, 9, 10], 2, null, "GPU", null, null, null, null, null],
      ["BlockRemoved", [7, H2], "GPU", null],
    ], 2],
  },
  {
    name: "G2 (CPU_PINNED) store and removal",
    batch: {
      ts: 1700000001.25,
      dataParallelRank: 1,
      events: [
        { type: "BlockStored", blockHashes: [7n], parentBlockHash: 200n, tokenIds: [5, 6, 7, 8], blockSize: 4, loraId: null, medium: "CPU_PINNED", loraName: null, extraKeys: [null], groupIdx: 0, kvCacheSpecKind: "full_attention" },
        { type: "BlockRemoved", blockHashes: [7n], medium: "CPU_PINNED", groupIdx: 0 },
      ],
    },
    wire: [1700000001.25, [
      ["BlockStored", [7], 200, [5, 6, 7, 8], 4, null, "CPU_PINNED", null, [null], 0, "full_attention", null],
      ["BlockRemoved", [7], "CPU_PINNED", 0],
    ], 1],
  },
  {
    name: "every field set (LoRA, extra_keys, sliding window) and a null medium",
    batch: {
      ts: 1700000002.125,
      dataParallelRank: 300,
      events: [
        { type: "BlockStored", blockHashes: [1n, 2n], parentBlockHash: 0n, tokenIds: [1, 2], blockSize: 1, loraId: 3, medium: null, loraName: "adapter-a", extraKeys: [["adapter-a", ["mm", 7]], null], groupIdx: 1, kvCacheSpecKind: "sliding_window", kvCacheSpecSlidingWindow: 4096 },
      ],
    },
    wire: [1700000002.125, [
      ["BlockStored", [1, 2], 0, [1, 2], 1, 3, null, "adapter-a", [["adapter-a", ["mm", 7]], null], 1, "sliding_window", 4096],
    ], 300],
  },
];

describe("array encoding (--kv-events-encoding array: vLLM 0.9.1–0.23's array_like structs)", () => {
  for (const c of ARRAY_CASES) {
    test(`${c.name}: byte for byte as an independent encoder writes vLLM's positional values`, () => {
      expect(toHex(encodeBatch(c.batch, "array"))).toBe(independent(c.wire));
    });
  }

  test("BlockStored has 12 elements, BlockRemoved 4, AllBlocksCleared 1, whatever is unset", () => {
    for (const c of ARRAY_CASES) {
      const events = (c.wire[1] as unknown[][]).map((e) => [e[0], e.length]);
      const ours = encodeBatch(c.batch, "array");
      const sizes = (decodeIndependently(ours)[1] as unknown[][]).map((e) => [e[0], e.length]);
      expect(sizes).toEqual(events);
      for (const [tag, n] of sizes) expect(n).toBe(tag === "BlockStored" ? 12 : tag === "BlockRemoved" ? 4 : 1);
    }
  });

  test("locality, ownership and session_id have no slot: refused, not silently dropped", () => {
    const [stored, removed] = ARRAY_CASES[2]!.batch.events;
    const one = (e: object) => () => encodeBatch({ ts: 1.5, dataParallelRank: 0, events: [e as never] }, "array");
    expect(one({ ...stored, ownership: "kvcr" })).toThrow("BlockStored: ownership has no slot in the array encoding");
    expect(one({ ...stored, locality: "rack-1" })).toThrow("BlockStored: locality has no slot");
    expect(one({ ...stored, sessionId: "s1" })).toThrow("BlockStored: session_id has no slot");
    expect(one({ ...removed, ownership: "kvcr" })).toThrow("BlockRemoved: ownership has no slot");
    expect(one({ ...removed, locality: "rack-1" })).toThrow("BlockRemoved: locality has no slot");
    // The map form still carries them.
    expect(() => encodeBatch({ ts: 1.5, dataParallelRank: 0, events: [{ ...stored!, ownership: "kvcr" } as never] })).not.toThrow();
  });

  test("our decoders read the 12-element stored and 4-element removed form (independent bytes and ours)", () => {
    for (const c of ARRAY_CASES) {
      const theirs = Uint8Array.from(Buffer.from(independent(c.wire), "hex"));
      for (const bytes of [theirs, encodeBatch(c.batch, "array")]) {
        // Nil optional slots decode as absent: the batch comes back as it was.
        expect(decodeBatch(bytes)).toEqual(c.batch);
        // The agent's fast path takes the form itself (no fallback) and agrees with decodeBatch.
        const fast = new FlatBatch();
        expect(decodeFlat(bytes, fast)).toBe(true);
        const slow = new FlatBatch();
        flatFromBatch(c.batch, slow);
        expect(flatView(fast)).toEqual(flatView(slow));
      }
    }
  });
});

function decodeIndependently(bytes: Uint8Array): unknown[] {
  return unpack(bytes) as unknown[];
}

function flatView(f: FlatBatch) {
  const events = [];
  for (let i = 0; i < f.count; i++) {
    const hs = f.hashStart[i]!;
    const pk = f.parent[i]!;
    events.push({
      kind: f.kind[i],
      medium: f.medium[i],
      ownership: f.ownership[i],
      blockSize: f.blockSize[i],
      words: Array.from(f.words.subarray(2 * hs, 2 * (hs + f.hashCount[i]!))),
      parent: pk < 0 ? null : [f.words[2 * pk], f.words[2 * pk + 1]],
      tokens: Array.from(f.tokens.subarray(f.tokenStart[i]!, f.tokenStart[i]! + f.tokenCount[i]!)),
    });
  }
  return { ts: f.ts, rank: f.dataParallelRank, events };
}
