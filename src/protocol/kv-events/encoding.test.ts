// Golden bytes of the two event encodings a publisher can write (SPEC §4.2): vLLM's maps with
// hashes in their smallest int form (as msgspec), and vLLM 0.9–0.23's positional arrays
// (`--kv-events-encoding array`). The hex below was written by msgpackr, a msgpack library
// independent of our writer, from the same values laid out as msgspec lays them out
// (one-off script: Packr({ useRecords: false, variableMapSize: true }), small hashes as numbers,
// hashes >= 2^63 as bigint, which msgpackr writes as uint64 `cf`).
import { describe, expect, test } from "bun:test";
import { decodeBatch, encodeBatch } from "./index.ts";
import type { KvEventBatch } from "./index.ts";

const toHex = (bytes: Uint8Array) => Buffer.from(bytes).toString("hex");
const H1 = 0xcb38e4d7fb2dca5cn;

const MAP_SMALL_HASHES: KvEventBatch = {
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

const ARRAY_G1: KvEventBatch = {
  ts: 1700000000.5,
  dataParallelRank: 0,
  events: [
    {
      type: "BlockStored",
      blockHashes: [H1, 300n],
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
    { type: "BlockRemoved", blockHashes: [300n], medium: "GPU", groupIdx: 0 },
    { type: "AllBlocksCleared" },
  ],
};
const ARRAY_G1_HEX =
  "93cb41d954fc40200000939bab426c6f636b53746f72656492cfcb38e4d7fb2dca5ccd012cc098010203040506070804c0a3475055c092c0c000ae66756c6c5f617474656e74696f6e94ac426c6f636b52656d6f76656491cd012ca34750550091b0416c6c426c6f636b73436c656172656400";

const ARRAY_G2_KVCR: KvEventBatch = {
  ts: 1700000001.25,
  dataParallelRank: 1,
  events: [
    {
      type: "BlockStored",
      blockHashes: [7n],
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
    { type: "BlockRemoved", blockHashes: [7n], medium: "CPU_PINNED", groupIdx: 0, ownership: "kvcr" },
  ],
};
const ARRAY_G2_KVCR_HEX =
  "93cb41d954fc40500000929eab426c6f636b53746f7265649107cfcb38e4d7fb2dca5c940506070804c0aa4350555f50494e4e4544c091c000ae66756c6c5f617474656e74696f6ec0c0a46b76637296ac426c6f636b52656d6f7665649107aa4350555f50494e4e454400c0a46b76637201";

describe("map encoding (vLLM's current form)", () => {
  test("hashes below 2^32 in their smallest int form, as msgspec writes them", () => {
    expect(toHex(encodeBatch(MAP_SMALL_HASHES))).toBe(MAP_SMALL_HEX);
    expect(decodeBatch(encodeBatch(MAP_SMALL_HASHES))).toEqual(MAP_SMALL_HASHES);
  });
});

describe("array encoding (--kv-events-encoding array: vLLM 0.9–0.23, array_like + omit_defaults)", () => {
  test("G1 store, removal and clear: trailing absent optional fields left out", () => {
    expect(toHex(encodeBatch(ARRAY_G1, "array"))).toBe(ARRAY_G1_HEX);
  });
  test("G2 KVCR-owned store and removal: absent fields before ownership written as nil", () => {
    expect(toHex(encodeBatch(ARRAY_G2_KVCR, "array"))).toBe(ARRAY_G2_KVCR_HEX);
  });
  test("our decoder reads the positional form back to the same events", () => {
    expect(decodeBatch(encodeBatch(ARRAY_G1, "array"))).toEqual(ARRAY_G1);
    expect(decodeBatch(encodeBatch(ARRAY_G2_KVCR, "array"))).toEqual(ARRAY_G2_KVCR);
  });
  test("an event with no optional field ends at lora_name / medium", () => {
    const bare: KvEventBatch = {
      ts: 1,
      dataParallelRank: null,
      events: [
        { type: "BlockStored", blockHashes: [1n], parentBlockHash: null, tokenIds: [9], blockSize: 1, loraId: null, medium: "GPU", loraName: null },
        { type: "BlockRemoved", blockHashes: [1n], medium: "GPU" },
      ],
    };
    // [1.0, [["BlockStored", [1], nil, [9], 1, nil, "GPU", nil], ["BlockRemoved", [1], "GPU"]]]
    expect(toHex(encodeBatch(bare, "array"))).toBe(
      "92cb3ff0000000000000" + "92" + "98ab426c6f636b53746f7265649101c0910901c0a3475055c0" + "93ac426c6f636b52656d6f7665649101a3475055",
    );
  });
});
