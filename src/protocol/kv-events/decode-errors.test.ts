// One test per rejection kind of decodeBatch: the ProtocolError message and the byte offset.
import { describe, expect, test } from "bun:test";
import vectors from "../../../test/fixtures/vectors.json";
import { ProtocolError } from "../../lib/errors.ts";
import { thrownBy } from "../../../test/harness.ts";
import { pack } from "../msgpack.ts";
import { decodeBatch } from "./index.ts";

const fromHex = (hex: string) => Uint8Array.from(Buffer.from(hex.replace(/\s+/g, ""), "hex"));

const rejection = (bytes: Uint8Array): ProtocolError => thrownBy(ProtocolError, () => decodeBatch(bytes));

/** Asserts the message starts with `message` + " at byte <offset>". */
function expectRejected(bytes: Uint8Array, message: string, offset: number): void {
  const err = rejection(bytes);
  expect(err.message).toStartWith(`${message} at byte ${offset} (`);
  expect(err.offset).toBe(offset);
  expect(err.code).toBe("PROTOCOL_INVALID");
}

const stored = (over: Record<string, unknown>) => ({
  type: "BlockStored", block_hashes: [1n], parent_block_hash: null, token_ids: [1, 2], block_size: 2,
  lora_id: null, medium: "GPU", lora_name: null, ...over,
});
const batchOf = (...events: unknown[]) => pack([1.5, events, 0]);
// [1.5, [ <event> ], 0]: the event starts after 93 cb<8> 91 = byte 11.
const EVENT_AT = 11;

function indexOf(bytes: Uint8Array, pattern: number[]): number {
  outer: for (let i = 0; i + pattern.length <= bytes.length; i++) {
    for (let j = 0; j < pattern.length; j++) if (bytes[i + j] !== pattern[j]) continue outer;
    return i;
  }
  throw new Error("pattern not found");
}

describe("decodeBatch rejects malformed payloads with offset and preview", () => {
  test("the message carries a hex preview with the offending byte bracketed", () => {
    const err = rejection(fromHex("93 cb 3ff8000000000000 05 00"));
    expect(err.message).toBe("events: expected array, got int at byte 10 (3f f8 00 00 00 00 00 00 [05] 00)");
    expect(err.preview).toBe("3f f8 00 00 00 00 00 00 [05] 00");
  });
  test("empty input", () => expectRejected(new Uint8Array(0), "truncated: expected batch, input ended", 0));
  test("batch neither array nor map", () => expectRejected(fromHex("a3 616263"), "batch: expected array or map, got string", 0));
  test("batch of the wrong arity", () =>
    expectRejected(pack([1.5]), "batch: expected [ts, events] or [ts, events, data_parallel_rank], got 1 elements", 0));
  test("ts not a number", () => expectRejected(pack(["now", [], 0]), "ts: expected number, got string", 1));
  test("ts not finite", () => expectRejected(fromHex("93 cb 7ff8000000000000 90 00"), "ts: expected a finite number, got NaN", 1));
  test("events not an array", () => expectRejected(pack([1.5, { a: 1 }, 0]), "events: expected array, got map", 10));
  test("data_parallel_rank negative", () =>
    expectRejected(pack([1.5, [], -1]), `data_parallel_rank: -1 is outside [0, ${Number.MAX_SAFE_INTEGER}]`, 11));
  test("data_parallel_rank not an int", () => expectRejected(pack([1.5, [], "0"]), "data_parallel_rank: expected int, got string", 11));
  test("batch map without events", () => expectRejected(pack({ ts: 1.5 }), "batch map: missing events", 0));
  test("batch map without ts", () => expectRejected(pack({ events: [] }), "batch map: missing ts", 0));
  test("batch map with a duplicate key", () =>
    expectRejected(fromHex("83 a2 7473 01 a6 6576656e7473 90 a2 7473 02"), 'batch: duplicate key "ts"', 13));
  test("event neither map nor array", () => expectRejected(batchOf(7), "event: expected map or array, got int", EVENT_AT));
  test("unknown event type", () =>
    expectRejected(batchOf({ type: "BlockMoved" }), 'event type: unknown "BlockMoved" (expected BlockStored, BlockRemoved or AllBlocksCleared)', EVENT_AT + 6));
  test("event type not a string", () => expectRejected(batchOf({ type: 3 }), "event type: expected string, got int", EVENT_AT + 6));
  test("map event whose first key is not type", () =>
    expectRejected(batchOf({ medium: "GPU", type: "BlockRemoved", block_hashes: [] }), 'event map: first key must be "type"', EVENT_AT + 1));
  test("empty map event", () => expectRejected(batchOf({}), 'event map: empty, expected a "type" key first', EVENT_AT));
  test("empty positional event", () => expectRejected(batchOf([]), "positional event: empty array, expected a type tag first", EVENT_AT));
  test("positional BlockStored too short", () =>
    expectRejected(batchOf(["BlockStored", [1n], null]), "positional BlockStored: 3 elements, needs at least 5", EVENT_AT));
  test("positional BlockRemoved too short", () =>
    expectRejected(batchOf(["BlockRemoved"]), "positional BlockRemoved: 1 elements, needs at least 2", EVENT_AT));
  test("BlockStored map missing a required key", () => {
    const { token_ids: _omit, ...noTokens } = stored({});
    expectRejected(batchOf(noTokens), "BlockStored: missing token_ids", EVENT_AT);
    const { block_size: _omit2, ...noSize } = stored({});
    expectRejected(batchOf(noSize), "BlockStored: missing block_size", EVENT_AT);
  });
  test("BlockRemoved map missing block_hashes", () =>
    expectRejected(batchOf({ type: "BlockRemoved", medium: "GPU" }), "BlockRemoved: missing block_hashes", EVENT_AT));
  test("duplicate key in an event map", () => {
    // {type: BlockRemoved, block_hashes: [], medium: nil, medium: nil}
    const bytes = fromHex("93 01 91 84 a4 74797065 ac 426c6f636b52656d6f766564 ac 626c6f636b5f686173686573 90 a6 6d656469756d c0 a6 6d656469756d c0 00");
    expectRejected(bytes, 'event map: duplicate key "medium"', 44);
  });
  test("map key not a string", () => expectRejected(fromHex("93 01 91 82 a4 74797065 b0 416c6c426c6f636b73436c6561726564 01 02 00"), "event key: expected string, got int", 26));
  test("block_hashes not an array", () => expectRejected(batchOf(stored({ block_hashes: null })), "block_hashes: expected array, got nil", 42));
  test("hash of the wrong type", () => expectRejected(batchOf(stored({ block_hashes: ["h"] })), "block_hashes element: expected int or bytes hash, got string", 43));
  test("float hash", () => expectRejected(batchOf(stored({ block_hashes: [1.5] })), "block_hashes element: expected int or bytes hash, got float", 43));
  test("bytes hash shorter than 8 bytes", () =>
    expectRejected(batchOf(stored({ block_hashes: [Uint8Array.from([1, 2, 3, 4])] })), "block_hashes element: bytes hash has 4 bytes, needs at least 8", 43));
  test("parent_block_hash of the wrong type", () =>
    expectRejected(batchOf(stored({ parent_block_hash: "p" })), "parent_block_hash: expected int or bytes hash, got string", 70));
  test("token id negative", () => expectRejected(batchOf(stored({ token_ids: [1, -1] })), "token_ids element: -1 is outside [0, 4294967295]", 83));
  test("token id above u32", () =>
    expectRejected(batchOf(stored({ token_ids: [2n ** 32n] })), "token_ids element: 4294967296 is outside [0, 4294967295]", 82));
  test("token id not an int", () => expectRejected(batchOf(stored({ token_ids: [0.5] })), "token_ids element: expected int, got float", 82));
  test("token_ids not an array", () => expectRejected(batchOf(stored({ token_ids: "abc" })), "token_ids: expected array, got string", 81));
  test("block_size zero", () => expectRejected(batchOf(stored({ block_size: 0 })), `block_size: 0 is outside [1, ${Number.MAX_SAFE_INTEGER}]`, 95));
  test("64-bit int beyond the safe range", () =>
    expectRejected(batchOf(stored({ block_size: 2n ** 60n })), "block_size: 1152921504606846976 is outside the safe integer range", 95));
  test("medium not a string", () => expectRejected(batchOf(stored({ medium: 1 })), "medium: expected string, got int", 112));
  test("invalid UTF-8 in a string", () => {
    const bytes = batchOf(stored({ medium: "GPX" }));
    const at = indexOf(bytes, [0xa3, 0x47, 0x50, 0x58]); // fixstr "GPX"
    bytes[at + 3] = 0xff; // → "GP\xff", not UTF-8
    expectRejected(bytes, "medium: invalid UTF-8", at);
  });
  test("lora_id not an int", () => expectRejected(batchOf(stored({ lora_id: "x" })), "lora_id: expected int, got string", 104));
  test("extra_keys not an array", () => expectRejected(batchOf(stored({ extra_keys: 5 })), "extra_keys: expected array, got int", 138));
  test("extra_keys entry neither tuple nor nil", () =>
    expectRejected(batchOf(stored({ extra_keys: ["salt"] })), "extra_keys entry: expected array or nil, got string", 139));
  test("extra_keys value of an unsupported type", () =>
    expectRejected(batchOf(stored({ extra_keys: [[{ a: 1 }]] })), "extra_keys entry: unsupported map value", 140));
  test("nesting beyond the budget", () => {
    let deep: unknown = 1;
    for (let i = 0; i < 40; i++) deep = [deep];
    expect(rejection(batchOf(stored({ extra_keys: [deep] }))).message).toContain("extra_keys entry: nested deeper than 32 levels");
    expect(rejection(batchOf(stored({ future_key: deep }))).message).toContain("unknown event field: nested deeper than 32 levels");
  });
  test("reserved byte 0xc1 inside a skipped value", () =>
    expectRejected(fromHex("93 01 91 82 a4 74797065 b0 416c6c426c6f636b73436c6561726564 a1 78 c1 00"), "unknown event field: invalid msgpack byte 0xc1", 28));
  test("ext values are skipped in unknown fields but refused in extra_keys", () => {
    const clearedWithExt = fromHex("93 01 91 82 a4 74797065 b0 416c6c426c6f636b73436c6561726564 a1 78 d6 01 00000000 00");
    expect(decodeBatch(clearedWithExt).events).toEqual([{ type: "AllBlocksCleared" }]);
    const withExt = (prefix: number[]) => {
      const bytes = batchOf(stored({ extra_keys: [[1, 2, 3]] }));
      const at = indexOf(bytes, [0x91, 0x93, 1, 2, 3]) + 2; // extra_keys: [[1, 2, 3]]
      bytes.set(prefix, at); // the tuple becomes [fixext1(type 2, data 3)] + 2 missing elements
      return { bytes, at };
    };
    const { bytes, at } = withExt([0xd4]);
    expectRejected(bytes, "extra_keys entry: unsupported ext value", at);
  });
  test("a declared length the buffer cannot hold is refused before allocating", () =>
    expectRejected(fromHex("93 01 dd ffffffff 00"), "truncated events: 4294967295 elements declared, 1 bytes left", 2));
  test("truncated inside a value", () => {
    const golden = fromHex(vectors.wire_batches[0]!.hex);
    expectRejected(golden.subarray(0, 5), "truncated ts: needs 8 more bytes, 3 left", 1);
    // 93 cb<8> 93 8b a4"type" ab"BlockStored" ac"block_hashes" 92 [cf] <8 bytes>: cut inside the hash
    expectRejected(golden.subarray(0, 48), "truncated block_hashes element: needs 8 more bytes, 4 left", 43);
    expectRejected(golden.subarray(0, 34), "truncated event key: needs 12 more bytes, 4 left", 29);
    expectRejected(golden.subarray(0, 20), "truncated event: 11 entries declared, 8 bytes left", 11);
  });
  test("trailing bytes after a complete batch", () => {
    const golden = fromHex(vectors.wire_batches[1]!.hex);
    const bytes = new Uint8Array(golden.length + 2);
    bytes.set(golden);
    expectRejected(bytes, "2 trailing bytes after the batch", golden.length);
  });
});
