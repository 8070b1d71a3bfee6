// Golden wire bytes (fixtures/vectors.json), encoding choices, and decoding of every encoding vLLM has used.
import { describe, expect, test } from "bun:test";
import vectors from "../../../test/fixtures/vectors.json";
import { pack, unpack } from "../msgpack.ts";
import { decodeBatch, encodeBatch } from "./index.ts";
import type { BlockRemoved, BlockStored, VllmKvEventBatch } from "./index.ts";

const fromHex = (hex: string) => Uint8Array.from(Buffer.from(hex.replace(/\s+/g, ""), "hex"));
const toHex = (bytes: Uint8Array) => Buffer.from(bytes).toString("hex");

const H1 = 0xcb38e4d7fb2dca5cn; // 14643705804678351452, >= 2^63
const H2 = 0x44a2b2379d6d3c3dn; // < 2^63, still written as u64 `cf`

/** The batches the golden vectors were produced from, written out field by field. */
const GOLDEN: Record<string, VllmKvEventBatch> = {
  "g1-store-remove-clear": {
    ts: 1700000000.5,
    dataParallelRank: 0,
    events: [
      {
        type: "BlockStored",
        blockHashes: [H1, H2],
        parentBlockHash: null,
        tokenIds: [1, 2, 3, 4, 5, 6, 7, 8],
        blockSize: 4,
        loraId: null,
        medium: "GPU",
        loraName: null,
        extraKeys: [null, null],
        groupIdx: 0,
        kvCacheSpecKind: "full_attention",
      },
      { type: "BlockRemoved", blockHashes: [H2], medium: "GPU", groupIdx: 0 },
      { type: "AllBlocksCleared" },
    ],
  },
  "g2-kvcr-store": {
    ts: 1700000001.25,
    dataParallelRank: 1,
    events: [
      {
        type: "BlockStored",
        blockHashes: [H2],
        parentBlockHash: H1,
        tokenIds: [5, 6, 7, 8],
        blockSize: 4,
        loraId: null,
        medium: "CPU_PINNED",
        loraName: null,
        extraKeys: [null],
        groupIdx: 0,
        kvCacheSpecKind: "full_attention",
        ownership: "kvcr",
      },
      { type: "BlockRemoved", blockHashes: [H2], medium: "CPU_PINNED", groupIdx: 0, ownership: "kvcr" },
    ],
  },
};

describe("golden wire bytes (fixtures/vectors.json wire_batches)", () => {
  test("every vector has a batch here", () => {
    expect(Object.keys(GOLDEN).sort()).toEqual(vectors.wire_batches.map((w) => w.name).sort());
  });
  for (const w of vectors.wire_batches) {
    const batch = GOLDEN[w.name]!;
    test(`${w.name}: encodes byte for byte`, () => {
      expect(toHex(encodeBatch(batch))).toBe(w.hex);
    });
    test(`${w.name}: decodes to the batch`, () => {
      expect(decodeBatch(fromHex(w.hex))).toEqual(batch);
    });
    test(`${w.name}: decodes from a subarray of a larger buffer (frames are views)`, () => {
      const bytes = fromHex(w.hex);
      const big = new Uint8Array(bytes.length + 20);
      big.set(bytes, 7);
      expect(decodeBatch(big.subarray(7, 7 + bytes.length))).toEqual(batch);
    });
  }

  test("an independent msgpack decoder reads our bytes as vLLM's field names and values", () => {
    const [ts, events, rank] = unpack(encodeBatch(GOLDEN["g2-kvcr-store"]!)) as [number, Record<string, unknown>[], number];
    expect(ts).toBe(1700000001.25);
    expect(rank).toBe(1);
    expect(Object.keys(events[0]!)).toEqual([
      "type", "block_hashes", "parent_block_hash", "token_ids", "block_size", "lora_id", "medium",
      "lora_name", "extra_keys", "group_idx", "kv_cache_spec_kind", "ownership",
    ]);
    expect(events[0]!.parent_block_hash).toBe(H1);
    expect(events[0]!.block_hashes).toEqual([H2]);
  });
});

describe("encoding choices", () => {
  const stored = GOLDEN["g1-store-remove-clear"]!.events[0] as BlockStored;
  test("ts is float64 even when integral", () => {
    const bytes = encodeBatch({ ts: 1700000000, events: [], dataParallelRank: 0 });
    expect(toHex(bytes)).toBe("93cb41d954fc4000000090" + "00");
  });
  test("a null data_parallel_rank gives a two-element batch (msgspec omits the default)", () => {
    expect(toHex(encodeBatch({ ts: 0.5, events: [], dataParallelRank: null }))).toBe("92cb3fe000000000000090");
  });
  test("ints take their smallest form", () => {
    const bytes = encodeBatch({ ts: 1, dataParallelRank: 300, events: [{ ...stored, tokenIds: [0, 127, 128, 255, 256, 65535, 65536, 4294967295] }] });
    expect(toHex(bytes)).toContain("a9746f6b656e5f69647398007fcc80ccffcd0100cdffffce00010000ceffffffff");
    expect(toHex(bytes).endsWith("cd012c")).toBe(true);
  });
  test("hashes in their smallest form, as msgspec writes ints (u64 cf from 2^32 on)", () => {
    const bytes = encodeBatch({ ts: 1, dataParallelRank: 0, events: [{ type: "BlockRemoved", blockHashes: [0n, 1n, 0xffff_ffffn, 0x1_0000_0000n], medium: null }] });
    expect(toHex(bytes)).toContain("940001ceffffffffcf0000000100000000");
  });
  test("non-ASCII strings are UTF-8 with the right header", () => {
    const e = decodeBatch(encodeBatch({ ts: 1, dataParallelRank: 0, events: [{ ...stored, loraName: "λ-adapter-é" }] }));
    expect((e.events[0] as BlockStored).loraName).toBe("λ-adapter-é");
  });
  test("values with no wire form are refused with a clear error", () => {
    const bad = (e: Partial<BlockStored>) => () => encodeBatch({ ts: 1, dataParallelRank: 0, events: [{ ...stored, ...e }] });
    expect(bad({ blockHashes: [-1n] })).toThrow("hash -1 is outside u64 range");
    expect(bad({ blockHashes: [1n << 64n] })).toThrow("outside u64 range");
    expect(bad({ tokenIds: [1.5] })).toThrow("token id 1.5 is not a u32");
    expect(bad({ tokenIds: [-1] })).toThrow("token id -1 is not a u32");
    expect(bad({ blockSize: 0 })).toThrow("block_size must be >= 1, got 0");
    expect(bad({ groupIdx: -1 })).toThrow("expected a non-negative safe integer, got -1");
    expect(() => encodeBatch({ ts: Number.NaN, events: [], dataParallelRank: 0 })).toThrow("ts must be a finite number");
    expect(() => encodeBatch({ ts: 1, events: [], dataParallelRank: -1 })).toThrow("non-negative");
  });
});

describe("decoding the other encodings vLLM has used", () => {
  const positional = [
    1700000000.5,
    [
      ["BlockStored", [H1, H2], null, [1, 2, 3, 4, 5, 6, 7, 8], 4, null, "GPU", null],
      ["BlockRemoved", [H2], "GPU"],
      ["AllBlocksCleared"],
    ],
    0,
  ];
  const expected: VllmKvEventBatch = {
    ts: 1700000000.5,
    dataParallelRank: 0,
    events: [
      { type: "BlockStored", blockHashes: [H1, H2], parentBlockHash: null, tokenIds: [1, 2, 3, 4, 5, 6, 7, 8], blockSize: 4, loraId: null, medium: "GPU", loraName: null },
      { type: "BlockRemoved", blockHashes: [H2], medium: "GPU" },
      { type: "AllBlocksCleared" },
    ],
  };

  test("positional-array events", () => {
    expect(decodeBatch(pack(positional))).toEqual(expected);
  });
  test("oldest positional form: no medium/lora_name, no dp rank", () => {
    const bytes = pack([2.5, [["BlockStored", [7n], 3n, [9, 9], 2, 5], ["BlockRemoved", [7n]]]]);
    expect(decodeBatch(bytes)).toEqual({
      ts: 2.5,
      dataParallelRank: null,
      events: [
        { type: "BlockStored", blockHashes: [7n], parentBlockHash: 3n, tokenIds: [9, 9], blockSize: 2, loraId: 5, medium: null, loraName: null },
        { type: "BlockRemoved", blockHashes: [7n], medium: null },
      ],
    });
  });
  test("positional trailing optional fields, nils as absent, unknown extra elements skipped", () => {
    const bytes = pack([1.5, [
      ["BlockStored", [1n], null, [1], 1, null, "CPU_PINNED", "l", [["mm", 3]], null, "sliding_window", 128, null, "kvcr", "s1", { future: true }],
      ["BlockRemoved", [1n], "CPU_PINNED", 2, "rack-1", "kvcr", "future"],
      ["AllBlocksCleared", "future"],
    ], 3]);
    expect(decodeBatch(bytes).events).toEqual([
      { type: "BlockStored", blockHashes: [1n], parentBlockHash: null, tokenIds: [1], blockSize: 1, loraId: null, medium: "CPU_PINNED", loraName: "l", extraKeys: [["mm", 3]], kvCacheSpecKind: "sliding_window", kvCacheSpecSlidingWindow: 128, ownership: "kvcr", sessionId: "s1" },
      { type: "BlockRemoved", blockHashes: [1n], medium: "CPU_PINNED", groupIdx: 2, locality: "rack-1", ownership: "kvcr" },
      { type: "AllBlocksCleared" },
    ]);
  });
  test("a batch without data_parallel_rank, and one with an explicit nil rank", () => {
    expect(decodeBatch(pack([1.5, []]))).toEqual({ ts: 1.5, events: [], dataParallelRank: null });
    expect(decodeBatch(pack([1.5, [], null]))).toEqual({ ts: 1.5, events: [], dataParallelRank: null });
  });
  test("a map-encoded batch (vLLM EventBatch without array_like), keys in any order", () => {
    expect(decodeBatch(pack({ events: [{ type: "AllBlocksCleared" }], ts: 3.25 }))).toEqual({ ts: 3.25, events: [{ type: "AllBlocksCleared" }], dataParallelRank: null });
    expect(decodeBatch(pack({ ts: 3.25, events: [], data_parallel_rank: 2, future: [1] })).dataParallelRank).toBe(2);
  });
  test("integer and float32 ts are accepted", () => {
    expect(decodeBatch(pack([1700000000, []])).ts).toBe(1700000000);
    expect(decodeBatch(fromHex("92ca3fc0000090")).ts).toBe(1.5);
  });
  test("map events: unknown keys skipped, other types' keys ignored, optional nil = absent", () => {
    const bytes = pack([1, [
      { type: "BlockStored", block_hashes: [1n], parent_block_hash: null, token_ids: [1], block_size: 1, lora_id: 3, medium: "GPU", lora_name: null, group_idx: null, cache_salt: "x", nested: { a: [1, 2] } },
      { type: "BlockRemoved", block_hashes: [2n], medium: "GPU", token_ids: "ignored" },
      { type: "AllBlocksCleared", block_hashes: [1n] },
    ], 0]);
    expect(decodeBatch(bytes).events).toEqual([
      { type: "BlockStored", blockHashes: [1n], parentBlockHash: null, tokenIds: [1], blockSize: 1, loraId: 3, medium: "GPU", loraName: null },
      { type: "BlockRemoved", blockHashes: [2n], medium: "GPU" },
      { type: "AllBlocksCleared" },
    ]);
  });
  test("map events with missing nullable keys read them as null", () => {
    const bytes = pack([1, [{ type: "BlockStored", block_hashes: [1n], token_ids: [1], block_size: 1 }, { type: "BlockRemoved", block_hashes: [] }], 0]);
    expect(decodeBatch(bytes).events).toEqual([
      { type: "BlockStored", blockHashes: [1n], parentBlockHash: null, tokenIds: [1], blockSize: 1, loraId: null, medium: null, loraName: null },
      { type: "BlockRemoved", blockHashes: [], medium: null },
    ]);
  });
});

describe("hash encodings", () => {
  const removed = (hashHex: string) => fromHex(`93 01 91 83 a4 74797065 ac 426c6f636b52656d6f766564 ac 626c6f636b5f686173686573 91 ${hashHex} a6 6d656469756d c0 00`);
  const decodeHash = (hashHex: string) => (decodeBatch(removed(hashHex)).events[0] as BlockRemoved).blockHashes[0];
  test("unsigned of every width", () => {
    expect(decodeHash("05")).toBe(5n);
    expect(decodeHash("ccff")).toBe(255n);
    expect(decodeHash("cd1234")).toBe(0x1234n);
    expect(decodeHash("ce12345678")).toBe(0x12345678n);
    expect(decodeHash("cfcb38e4d7fb2dca5c")).toBe(H1);
  });
  test("signed ints are reinterpreted as u64 (two's complement)", () => {
    expect(decodeHash("ff")).toBe(0xffff_ffff_ffff_ffffn);
    expect(decodeHash("d080")).toBe(2n ** 64n - 128n);
    expect(decodeHash("d1fffe")).toBe(2n ** 64n - 2n);
    expect(decodeHash("d2fffffffe")).toBe(2n ** 64n - 2n);
    expect(decodeHash("d3cb38e4d7fb2dca5c")).toBe(H1); // same 8 bytes, signed view
    expect(decodeHash("d344a2b2379d6d3c3d")).toBe(H2);
    expect(decodeHash("d07f")).toBe(127n);
  });
  test("bytes hashes use their last 8 bytes big-endian", () => {
    expect(decodeHash("c408cb38e4d7fb2dca5c")).toBe(H1);
    const sha256 = "00".repeat(24) + "44a2b2379d6d3c3d";
    expect(decodeHash(`c420${sha256}`)).toBe(H2);
    expect(decodeHash(`c50020${sha256}`)).toBe(H2);
    expect(decodeHash(`c600000020${sha256}`)).toBe(H2);
  });
  test("parent_block_hash accepts the same encodings", () => {
    const bytes = pack([1, [["BlockStored", [1n], -1n, [1], 1, null, null, null]], 0]);
    expect((decodeBatch(bytes).events[0] as BlockStored).parentBlockHash).toBe(2n ** 64n - 1n);
    const fromBytes = pack([1, [["BlockStored", [1n], Uint8Array.from([9, 0, 0, 0, 0, 0, 0, 0, 42]), [1], 1]], 0]);
    expect((decodeBatch(fromBytes).events[0] as BlockStored).parentBlockHash).toBe(42n);
  });
});

describe("extra_keys", () => {
  test("tuples of mixed values survive a round trip", () => {
    const extraKeys = [null, ["a".repeat(64), ["mm", 7], 2 ** 40, -3, 1.5, true, null, 5n, -(2n ** 63n), Uint8Array.from([1, 2])]];
    const batch: VllmKvEventBatch = {
      ts: 9,
      dataParallelRank: 0,
      events: [{ type: "BlockStored", blockHashes: [1n, 2n], parentBlockHash: null, tokenIds: [1, 2], blockSize: 1, loraId: null, medium: null, loraName: null, extraKeys }],
    };
    expect(decodeBatch(encodeBatch(batch))).toEqual(batch);
  });
});
