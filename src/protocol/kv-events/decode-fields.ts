// Field-level reading for KV-event decoding: the field table (wire names, positional order) and one
// reader per field with its type rules. Shared by the map and the positional event encodings.
import type { MsgpackReader } from "../msgpack.ts";
import { KeyTable, typeName } from "../msgpack.ts";
import type { ExtraKeys } from "./types.ts";

/** Field ids; the order is vLLM's struct field order, which is also the positional order. */
export const F = {
  type: 0,
  blockHashes: 1,
  parentBlockHash: 2,
  tokenIds: 3,
  blockSize: 4,
  loraId: 5,
  medium: 6,
  loraName: 7,
  extraKeys: 8,
  groupIdx: 9,
  kvCacheSpecKind: 10,
  kvCacheSpecSlidingWindow: 11,
  locality: 12,
  ownership: 13,
  sessionId: 14,
} as const;

export const EVENT_KEYS = new KeyTable([
  "type",
  "block_hashes",
  "parent_block_hash",
  "token_ids",
  "block_size",
  "lora_id",
  "medium",
  "lora_name",
  "extra_keys",
  "group_idx",
  "kv_cache_spec_kind",
  "kv_cache_spec_sliding_window",
  "locality",
  "ownership",
  "session_id",
]);

/** Positional field order after the tag (older vLLM `array_like` encoding; trailing ones optional). */
export const STORED_POSITIONAL: readonly number[] = [
  F.blockHashes, F.parentBlockHash, F.tokenIds, F.blockSize, F.loraId, F.medium, F.loraName,
  F.extraKeys, F.groupIdx, F.kvCacheSpecKind, F.kvCacheSpecSlidingWindow, F.locality,
  F.ownership, F.sessionId,
];
export const REMOVED_POSITIONAL: readonly number[] = [
  F.blockHashes, F.medium, F.groupIdx, F.locality, F.ownership,
];
/** Bit masks (1 << field id) of the fields a map event of each type reads; its other keys are
 * skipped like unknown ones. */
export const STORED_FIELDS = STORED_POSITIONAL.reduce((m, id) => m | (1 << id), 0);
export const REMOVED_FIELDS = REMOVED_POSITIONAL.reduce((m, id) => m | (1 << id), 0);

const MAX_U32 = 0xffff_ffff;
const MAX_SAFE = Number.MAX_SAFE_INTEGER;

/** Scratch for one event's fields; `undefined` = not on the wire (or nil for an optional field). */
export class EventFields {
  blockHashes: bigint[] | undefined;
  parentBlockHash: bigint | null = null;
  tokenIds: number[] | undefined;
  blockSize: number | undefined;
  loraId: number | null = null;
  medium: string | null = null;
  loraName: string | null = null;
  extraKeys: ExtraKeys[] | undefined;
  groupIdx: number | undefined;
  kvCacheSpecKind: string | undefined;
  kvCacheSpecSlidingWindow: number | undefined;
  locality: string | undefined;
  ownership: string | undefined;
  sessionId: string | undefined;
}

/** Reads the value of field `id` at the cursor into `f`. */
export function readField(r: MsgpackReader, id: number, f: EventFields): void {
  switch (id) {
    case F.blockHashes: {
      const n = r.arrayHeader("block_hashes");
      const hashes = new Array<bigint>(n);
      for (let i = 0; i < n; i++) hashes[i] = r.hash("block_hashes element");
      f.blockHashes = hashes;
      return;
    }
    case F.parentBlockHash:
      f.parentBlockHash = r.hashOrNil("parent_block_hash");
      return;
    case F.tokenIds: {
      const n = r.arrayHeader("token_ids");
      const tokens = new Array<number>(n);
      // Hot loop: the unsigned forms msgspec writes are read inline when fully in bounds; any
      // other form, or a truncated one, goes through the checked generic reader.
      const bytes = r.bytes;
      for (let i = 0; i < n; i++) {
        const p = r.pos;
        const b = bytes[p]!;
        if (b < 0x80) {
          tokens[i] = b; // (past the end b is undefined, so this branch never reads out of bounds)
          r.pos = p + 1;
        } else if (b === 0xcd && p + 3 <= r.end) {
          tokens[i] = (bytes[p + 1]! << 8) | bytes[p + 2]!;
          r.pos = p + 3;
        } else if (b === 0xce && p + 5 <= r.end) {
          tokens[i] = r.view.getUint32(p + 1);
          r.pos = p + 5;
        } else if (b === 0xcc && p + 2 <= r.end) {
          tokens[i] = bytes[p + 1]!;
          r.pos = p + 2;
        } else {
          tokens[i] = r.intIn("token_ids element", 0, MAX_U32);
        }
      }
      f.tokenIds = tokens;
      return;
    }
    case F.blockSize:
      f.blockSize = r.intIn("block_size", 1, MAX_SAFE);
      return;
    case F.loraId:
      f.loraId = r.intOrNil("lora_id");
      return;
    case F.medium:
      f.medium = r.strOrNil("medium");
      return;
    case F.loraName:
      f.loraName = r.strOrNil("lora_name");
      return;
    case F.extraKeys:
      f.extraKeys = r.nil("extra_keys") ? undefined : readExtraKeys(r);
      return;
    case F.groupIdx:
      f.groupIdx = r.nil("group_idx") ? undefined : r.intIn("group_idx", 0, MAX_SAFE);
      return;
    case F.kvCacheSpecKind:
      f.kvCacheSpecKind = r.strOrNil("kv_cache_spec_kind") ?? undefined;
      return;
    case F.kvCacheSpecSlidingWindow:
      f.kvCacheSpecSlidingWindow = r.nil("kv_cache_spec_sliding_window")
        ? undefined
        : r.intIn("kv_cache_spec_sliding_window", 0, MAX_SAFE);
      return;
    case F.locality:
      f.locality = r.strOrNil("locality") ?? undefined;
      return;
    case F.ownership:
      f.ownership = r.strOrNil("ownership") ?? undefined;
      return;
    case F.sessionId:
      f.sessionId = r.strOrNil("session_id") ?? undefined;
      return;
    default:
      r.skip("unknown field");
  }
}

/** `extra_keys`: one entry per block, each a tuple of plain values or nil. */
function readExtraKeys(r: MsgpackReader): ExtraKeys[] {
  const n = r.arrayHeader("extra_keys");
  const out = new Array<ExtraKeys>(n);
  for (let i = 0; i < n; i++) {
    const kind = typeName(r.peek("extra_keys entry"));
    if (kind === "nil") {
      r.pos++;
      out[i] = null;
    } else if (kind === "array") {
      out[i] = r.value("extra_keys entry") as ExtraKeys; // value() enforces the nesting budget
    } else {
      r.fail(`extra_keys entry: expected array or nil, got ${kind}`);
    }
  }
  return out;
}
