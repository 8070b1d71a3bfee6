// The `kvcr-mock events` JSON line of a batch: vLLM's own field names, hashes as decimal
// strings, absent optional fields left out. Pure: returns a JSON-safe object (no bigint inside).
import type { MsgpackValue } from "../msgpack.ts";
import type { ExtraKeys, VllmKvEvent, VllmKvEventBatch } from "./types.ts";

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

export interface VllmKvEventBatchJson {
  /** A number while it is a safe integer (always, in practice), else a decimal string. */
  seq: number | string;
  topic: string;
  ts: number;
  data_parallel_rank: number | null;
  events: { [key: string]: JsonValue }[];
}

export interface BatchJsonContext {
  seq: bigint;
  topic: string;
}

export function batchToJson(batch: VllmKvEventBatch, ctx: BatchJsonContext): VllmKvEventBatchJson {
  return {
    seq: ctx.seq <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(ctx.seq) : ctx.seq.toString(),
    topic: ctx.topic,
    ts: batch.ts,
    data_parallel_rank: batch.dataParallelRank,
    events: batch.events.map(eventToJson),
  };
}

export function eventToJson(e: VllmKvEvent): { [key: string]: JsonValue } {
  switch (e.type) {
    case "BlockStored": {
      const out: { [key: string]: JsonValue } = {
        type: e.type,
        block_hashes: e.blockHashes.map(String),
        parent_block_hash: e.parentBlockHash === null ? null : e.parentBlockHash.toString(),
        token_ids: [...e.tokenIds],
        block_size: e.blockSize,
        lora_id: e.loraId,
        medium: e.medium,
        lora_name: e.loraName,
      };
      if (e.extraKeys != null) out.extra_keys = e.extraKeys.map(extraKeysToJson);
      if (e.groupIdx != null) out.group_idx = e.groupIdx;
      if (e.kvCacheSpecKind != null) out.kv_cache_spec_kind = e.kvCacheSpecKind;
      if (e.kvCacheSpecSlidingWindow != null) out.kv_cache_spec_sliding_window = e.kvCacheSpecSlidingWindow;
      if (e.locality != null) out.locality = e.locality;
      if (e.ownership != null) out.ownership = e.ownership;
      if (e.sessionId != null) out.session_id = e.sessionId;
      return out;
    }
    case "BlockRemoved": {
      const out: { [key: string]: JsonValue } = {
        type: e.type,
        block_hashes: e.blockHashes.map(String),
        medium: e.medium,
      };
      if (e.groupIdx != null) out.group_idx = e.groupIdx;
      if (e.locality != null) out.locality = e.locality;
      if (e.ownership != null) out.ownership = e.ownership;
      return out;
    }
    case "AllBlocksCleared":
      return { type: e.type };
  }
}

function extraKeysToJson(keys: ExtraKeys): JsonValue {
  return keys === null ? null : keys.map(valueToJson);
}

/** bigint → decimal string, bytes → lowercase hex string, arrays recursively. */
function valueToJson(v: MsgpackValue): JsonValue {
  if (typeof v === "bigint") return v.toString();
  if (v instanceof Uint8Array) {
    let hex = "";
    for (const b of v) hex += b.toString(16).padStart(2, "0");
    return hex;
  }
  if (Array.isArray(v)) return (v as readonly MsgpackValue[]).map(valueToJson);
  return v as null | boolean | number | string;
}
