// Encodes KV-event batches exactly as vLLM's msgspec does: `[ts f64, [events], dp_rank]`,
// events as maps whose first key is "type", keys in vLLM's field order, optional keys omitted when
// absent, every int (hashes included) in its smallest form. Golden bytes: fixtures/vectors.json.
// Encoding "array" writes vLLM 0.9.1–0.23's positional events instead: `[tag, field, ...]` in field
// order. Those were msgspec `array_like=True` structs, and msgspec writes every field of an
// array-like struct whatever omit_defaults says, so each event has all its slots, nil when unset:
// BlockStored 12 elements, BlockRemoved 4, AllBlocksCleared 1. That era had no locality,
// ownership or session_id, so an event carrying one has no positional form and is refused.
import { concatBytes } from "../../lib/bytes.ts";
import { encodeError, MsgpackWriter, preEncodeStr } from "../msgpack.ts";
import type { MsgpackValue } from "../msgpack.ts";
import type { BlockRemoved, BlockStored, ExtraKeys, VllmKvEvent, VllmKvEventBatch } from "./types.ts";

const raw = (...parts: string[]): Uint8Array => concatBytes(parts.map(preEncodeStr));

// Constant runs pre-encoded once: the type entry plus the key that always follows it.
const STORED_HEAD = raw("type", "BlockStored", "block_hashes");
const REMOVED_HEAD = raw("type", "BlockRemoved", "block_hashes");
const CLEARED = raw("type", "AllBlocksCleared");
const K = {
  parentBlockHash: raw("parent_block_hash"),
  tokenIds: raw("token_ids"),
  blockSize: raw("block_size"),
  loraId: raw("lora_id"),
  medium: raw("medium"),
  loraName: raw("lora_name"),
  extraKeys: raw("extra_keys"),
  groupIdx: raw("group_idx"),
  kvCacheSpecKind: raw("kv_cache_spec_kind"),
  kvCacheSpecSlidingWindow: raw("kv_cache_spec_sliding_window"),
  locality: raw("locality"),
  ownership: raw("ownership"),
  sessionId: raw("session_id"),
};

/** How events are written: vLLM's current maps, or its older positional arrays. */
export const VllmKvEventsEncoding = { map: "map", array: "array" } as const;
export type VllmKvEventsEncoding = (typeof VllmKvEventsEncoding)[keyof typeof VllmKvEventsEncoding];

const TAG_STORED = raw("BlockStored");
const TAG_REMOVED = raw("BlockRemoved");
const TAG_CLEARED = raw("AllBlocksCleared");
/** Elements of a positional event, tag included. */
const STORED_FIELDS = 12;
const REMOVED_FIELDS = 4;

/** Owns one reused buffer; `encode` returns a fresh copy of the bytes. Not reentrant. */
export class VllmKvEventEncoder {
  private readonly w = new MsgpackWriter(4096);

  constructor(private readonly encoding: VllmKvEventsEncoding = VllmKvEventsEncoding.map) {}

  encode(batch: VllmKvEventBatch): Uint8Array {
    const w = this.w;
    w.reset();
    if (!Number.isFinite(batch.ts)) throw encodeError(`ts must be a finite number, got ${batch.ts}`);
    const rank = batch.dataParallelRank;
    // msgspec (array_like, omit_defaults) drops a trailing None rank: a two-element batch.
    w.writeArrayHeader(rank === null ? 2 : 3);
    w.writeFloat64(batch.ts);
    w.writeArrayHeader(batch.events.length);
    for (const event of batch.events) this.writeEvent(event);
    if (rank !== null) w.writeUint(rank);
    return w.finish();
  }

  private writeEvent(event: VllmKvEvent): void {
    if (this.encoding === VllmKvEventsEncoding.array) return this.writePositional(event);
    switch (event.type) {
      case "BlockStored":
        return this.writeStored(event);
      case "BlockRemoved":
        return this.writeRemoved(event);
      case "AllBlocksCleared":
        this.w.writeMapHeader(1);
        this.w.writeRaw(CLEARED);
        return;
      default:
        throw encodeError(`unknown event type ${(event as { type: unknown }).type}`);
    }
  }

  private writeStored(e: BlockStored): void {
    const w = this.w;
    const count =
      8 +
      present(e.extraKeys) +
      present(e.groupIdx) +
      present(e.kvCacheSpecKind) +
      present(e.kvCacheSpecSlidingWindow) +
      present(e.locality) +
      present(e.ownership) +
      present(e.sessionId);
    w.writeMapHeader(count);
    w.writeRaw(STORED_HEAD);
    this.writeHashes(e.blockHashes);
    w.writeRaw(K.parentBlockHash);
    this.writeStoredBody(e);
    this.writeOptionalStr(K.locality, e.locality);
    this.writeOptionalStr(K.ownership, e.ownership);
    this.writeOptionalStr(K.sessionId, e.sessionId);
  }

  /** parent_block_hash through lora_name, then the optional fields up to the sliding window. */
  private writeStoredBody(e: BlockStored): void {
    const w = this.w;
    // Positional: every slot is written, nil for an absent optional field.
    const positional = this.encoding === VllmKvEventsEncoding.array;
    if (e.parentBlockHash === null) w.writeNil();
    else w.writeU64Smallest(e.parentBlockHash);
    this.key(K.tokenIds);
    const tokens = e.tokenIds;
    w.writeArrayHeader(tokens.length);
    for (let i = 0; i < tokens.length; i++) {
      const t = tokens[i]!;
      if (t >>> 0 !== t) throw encodeError(`token id ${t} is not a u32`);
      w.writeUint(t);
    }
    this.key(K.blockSize);
    if (!(e.blockSize >= 1)) throw encodeError(`block_size must be >= 1, got ${e.blockSize}`);
    w.writeUint(e.blockSize);
    this.key(K.loraId);
    if (e.loraId === null) w.writeNil();
    else w.writeInt(e.loraId);
    this.key(K.medium);
    this.writeStrOrNil(e.medium);
    this.key(K.loraName);
    this.writeStrOrNil(e.loraName);
    if (e.extraKeys != null) {
      this.key(K.extraKeys);
      this.writeExtraKeys(e.extraKeys);
    } else if (positional) w.writeNil();
    if (e.groupIdx != null) {
      this.key(K.groupIdx);
      w.writeUint(e.groupIdx);
    } else if (positional) w.writeNil();
    if (e.kvCacheSpecKind != null) {
      this.key(K.kvCacheSpecKind);
      w.writeStr(e.kvCacheSpecKind);
    } else if (positional) w.writeNil();
    if (e.kvCacheSpecSlidingWindow != null) {
      this.key(K.kvCacheSpecSlidingWindow);
      w.writeUint(e.kvCacheSpecSlidingWindow);
    } else if (positional) w.writeNil();
  }

  /** A map key; nothing in positional form. */
  private key(k: Uint8Array): void {
    if (this.encoding === VllmKvEventsEncoding.map) this.w.writeRaw(k);
  }

  /** Positional events: `[tag, ...fields]`, every field written (nil when unset). */
  private writePositional(event: VllmKvEvent): void {
    const w = this.w;
    switch (event.type) {
      case "BlockStored":
        refuseUnpositional(event);
        w.writeArrayHeader(STORED_FIELDS);
        w.writeRaw(TAG_STORED);
        this.writeHashes(event.blockHashes);
        this.writeStoredBody(event);
        return;
      case "BlockRemoved":
        refuseUnpositional(event);
        w.writeArrayHeader(REMOVED_FIELDS);
        w.writeRaw(TAG_REMOVED);
        this.writeHashes(event.blockHashes);
        this.writeStrOrNil(event.medium);
        if (event.groupIdx != null) w.writeUint(event.groupIdx);
        else w.writeNil();
        return;
      case "AllBlocksCleared":
        w.writeArrayHeader(1);
        w.writeRaw(TAG_CLEARED);
        return;
      default:
        throw encodeError(`unknown event type ${(event as { type: unknown }).type}`);
    }
  }

  private writeRemoved(e: BlockRemoved): void {
    const w = this.w;
    w.writeMapHeader(3 + present(e.groupIdx) + present(e.locality) + present(e.ownership));
    w.writeRaw(REMOVED_HEAD);
    this.writeHashes(e.blockHashes);
    w.writeRaw(K.medium);
    this.writeStrOrNil(e.medium);
    if (e.groupIdx != null) {
      w.writeRaw(K.groupIdx);
      w.writeUint(e.groupIdx);
    }
    this.writeOptionalStr(K.locality, e.locality);
    this.writeOptionalStr(K.ownership, e.ownership);
  }

  private writeHashes(hashes: readonly bigint[]): void {
    const w = this.w;
    w.writeArrayHeader(hashes.length);
    for (let i = 0; i < hashes.length; i++) w.writeU64Smallest(hashes[i]!);
  }

  private writeStrOrNil(s: string | null): void {
    if (s === null) this.w.writeNil();
    else this.w.writeStr(s);
  }

  private writeOptionalStr(key: Uint8Array, s: string | undefined): void {
    if (s == null) return;
    this.w.writeRaw(key);
    this.w.writeStr(s);
  }

  private writeExtraKeys(perBlock: readonly ExtraKeys[]): void {
    const w = this.w;
    w.writeArrayHeader(perBlock.length);
    for (const keys of perBlock) {
      if (keys === null) w.writeNil();
      else this.writeValue(keys, 0);
    }
  }

  /** Generic value, chosen so that MsgpackReader.value() gives back an equal value. */
  private writeValue(v: MsgpackValue, depth: number): void {
    const w = this.w;
    if (depth > 32) throw encodeError("extra_keys nested deeper than 32 levels");
    if (v === null) return w.writeNil();
    switch (typeof v) {
      case "boolean":
        return w.writeBool(v);
      case "string":
        return w.writeStr(v);
      case "bigint":
        return w.writeBigInt(v); // 64-bit forms decode as bigint again
      case "number":
        // 32-bit-range integers as ints (decode as number); everything else (fractions, larger
        // magnitudes, -0, NaN) as float64, which also decodes as the same number.
        if ((v | 0) === v || v >>> 0 === v) {
          if (!Object.is(v, -0)) return w.writeInt(v);
        }
        return w.writeFloat64(v);
    }
    if (v instanceof Uint8Array) return w.writeBin(v);
    if (Array.isArray(v)) {
      w.writeArrayHeader(v.length);
      for (const item of v as readonly MsgpackValue[]) this.writeValue(item, depth + 1);
      return;
    }
    throw encodeError(`extra_keys value of type ${typeof v} has no wire form`);
  }
}

function present(v: unknown): number {
  return v == null ? 0 : 1;
}

/** Dropping these would misstate whose blocks they are: refuse instead (no positional slot). */
function refuseUnpositional(e: BlockStored | BlockRemoved): void {
  const name =
    e.locality != null ? "locality" : e.ownership != null ? "ownership" : e.type === "BlockStored" && e.sessionId != null ? "session_id" : undefined;
  if (name) throw encodeError(`${e.type}: ${name} has no slot in the array encoding (vLLM's positional events predate it)`);
}

const shared = { map: new VllmKvEventEncoder(VllmKvEventsEncoding.map), array: new VllmKvEventEncoder(VllmKvEventsEncoding.array) };

/** The batch's wire payload (a fresh Uint8Array). Throws KvcrError ENCODE_INVALID for values with no wire form. */
export function encodeBatch(batch: VllmKvEventBatch, encoding: VllmKvEventsEncoding = VllmKvEventsEncoding.map): Uint8Array {
  return shared[encoding].encode(batch);
}
