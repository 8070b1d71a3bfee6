// The `kvcr-mock events` JSON view of a batch.
import { describe, expect, test } from "bun:test";
import vectors from "../../../test/fixtures/vectors.json";
import { batchToJson, decodeBatch } from "./index.ts";

const golden = (i: number) => decodeBatch(Uint8Array.from(Buffer.from(vectors.wire_batches[i]!.hex, "hex")));

describe("batchToJson (the `kvcr-mock events` line)", () => {
  test("vLLM field names, hashes as decimal strings, absent optional fields left out", () => {
    const line = JSON.stringify(batchToJson(golden(1), { seq: 41n, topic: "kvcr-0123456789abcdef" }));
    expect(line).toBe(
      '{"seq":41,"topic":"kvcr-0123456789abcdef","ts":1700000001.25,"data_parallel_rank":1,"events":[' +
        '{"type":"BlockStored","block_hashes":["4945711292740353085"],"parent_block_hash":"14643705804678351452",' +
        '"token_ids":[5,6,7,8],"block_size":4,"lora_id":null,"medium":"CPU_PINNED","lora_name":null,"extra_keys":[null],' +
        '"group_idx":0,"kv_cache_spec_kind":"full_attention","ownership":"kvcr"},' +
        '{"type":"BlockRemoved","block_hashes":["4945711292740353085"],"medium":"CPU_PINNED","group_idx":0,"ownership":"kvcr"}]}',
    );
  });

  test("device batch: no ownership key, null parent, cleared event", () => {
    const json = batchToJson(golden(0), { seq: 0n, topic: "" });
    expect(json.events.map((e) => e.type)).toEqual(["BlockStored", "BlockRemoved", "AllBlocksCleared"]);
    expect("ownership" in json.events[0]!).toBe(false);
    expect(json.events[0]!.parent_block_hash).toBeNull();
    expect(json.events[2]).toEqual({ type: "AllBlocksCleared" });
  });

  describe("a batch with no dp rank, a huge seq and extra keys of every kind", () => {
    const odd = () =>
      batchToJson(
        {
          ts: 1,
          dataParallelRank: null,
          events: [{ type: "BlockStored", blockHashes: [1n], parentBlockHash: null, tokenIds: [1], blockSize: 1, loraId: 2, medium: null, loraName: "a", extraKeys: [[18446744073709551615n, Uint8Array.from([0, 171]), ["mm", 3]]], sessionId: "s" }],
        },
        { seq: 2n ** 60n, topic: "t" },
      );

    test("a missing dp rank prints null", () => {
      expect(odd().data_parallel_rank).toBeNull();
    });

    test("bigints (a seq beyond the safe range, extra keys) and bytes become strings", () => {
      const json = odd();
      expect(json.seq).toBe("1152921504606846976"); // beyond the safe range: a string, never a rounded number
      expect(json.events[0]!.extra_keys).toEqual([["18446744073709551615", "00ab", ["mm", 3]]]);
    });

    test("the session id is kept", () => {
      expect(odd().events[0]!.session_id).toBe("s");
    });

    test("the result stringifies as JSON", () => {
      const json = odd();
      expect(() => JSON.stringify(json)).not.toThrow();
    });
  });
});
