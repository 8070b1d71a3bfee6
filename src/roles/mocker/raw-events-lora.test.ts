// An adapter's blocks on the raw stream: BlockStored carries lora_id and lora_name in vLLM's
// positions (map keys in order; the positional form's elements 5 and 7) and (lora_name,) as each
// block's extra keys, read back by an independent msgpack decoder and by our own.
import { describe, expect, test } from "bun:test";
import { decode } from "@msgpack/msgpack";
import type { KvEvent } from "../../core/kv/kv-events.ts";
import { decodeBatch, encodeBatch } from "../../protocol/kv-events/index.ts";
import { toVllmEvents } from "./raw-events.ts";

const stored = (loraName?: string): KvEvent => ({
  kind: "stored",
  tier: "device",
  parentHash: null,
  blockHashes: [11n, 12n],
  localHashes: [1n, 2n],
  tokenIds: new Uint32Array([1, 2, 3, 4, 5, 6, 7, 8]),
  blockSize: 4,
  ...(loraName !== undefined ? { loraName } : {}),
});
const ids = (name: string) => (name === "sql-lora" ? 3 : null);

describe("BlockStored of a LoRA adapter", () => {
  test("map encoding: lora_id and lora_name in vLLM's key order, extra_keys one (lora_name,) per block", () => {
    const payload = encodeBatch({ ts: 1, events: toVllmEvents([stored("sql-lora")], false, undefined, ids), dataParallelRank: 0 });
    const [, events] = decode(payload, { useBigInt64: true }) as [number, Record<string, unknown>[]];
    const e = events[0]!;
    expect(Object.keys(e).slice(0, 8)).toEqual(["type", "block_hashes", "parent_block_hash", "token_ids", "block_size", "lora_id", "medium", "lora_name"]);
    expect(e.lora_id).toBe(3);
    expect(e.lora_name).toBe("sql-lora");
    expect(e.extra_keys).toEqual([["sql-lora"], ["sql-lora"]]);
    const ours = decodeBatch(payload).events[0]!;
    expect(ours).toMatchObject({ type: "BlockStored", loraId: 3, loraName: "sql-lora" });
  });

  test("array encoding: lora_id is element 5, lora_name element 7", () => {
    const payload = encodeBatch({ ts: 1, events: toVllmEvents([stored("sql-lora")], false, undefined, ids), dataParallelRank: 0 }, "array");
    const [, events] = decode(payload, { useBigInt64: true }) as [number, unknown[][]];
    const e = events[0]!;
    expect(e[0]).toBe("BlockStored");
    expect(e[5]).toBe(3);
    expect(e[6]).toBe("GPU");
    expect(e[7]).toBe("sql-lora");
    expect(e[8]).toEqual([["sql-lora"], ["sql-lora"]]);
    expect(decodeBatch(payload).events[0]!).toMatchObject({ loraId: 3, loraName: "sql-lora" });
  });

  test("an adapter without an id (none given) still names itself; the base model names none", () => {
    const [a] = toVllmEvents([stored("other")], false, undefined, ids);
    expect(a).toMatchObject({ loraId: null, loraName: "other" });
    const [b] = toVllmEvents([stored()], false, undefined, ids);
    expect(b).toMatchObject({ loraId: null, loraName: null, extraKeys: [null, null] });
  });
});
