// Decodes KV-event payloads from every encoding vLLM has shipped: batch as
// `[ts, events]` / `[ts, events, dp_rank]` or a `{ts, events, data_parallel_rank}` map; events as
// maps (first key "type") or positional `[tag, ...]` arrays; hashes as u64, i64 or bytes.
// Anything else throws ProtocolError with the byte offset; unknown map keys and extra trailing
// positional fields are skipped (well-formed only), as Dynamo's decoder does, for forward compat.
import { KeyTable, MsgpackReader, typeName } from "../msgpack.ts";
import {
  EVENT_KEYS,
  EventFields,
  F,
  readField,
  REMOVED_FIELDS,
  REMOVED_POSITIONAL,
  STORED_FIELDS,
  STORED_POSITIONAL,
} from "./decode-fields.ts";
import type { BlockRemoved, BlockStored, VllmKvEvent, VllmKvEventBatch } from "./types.ts";

const TAGS = new KeyTable(["BlockStored", "BlockRemoved", "AllBlocksCleared"]);
const TAG_STORED = 0;
const TAG_REMOVED = 1;
const BATCH_KEYS = new KeyTable(["ts", "events", "data_parallel_rank"]);
const CLEARED: VllmKvEvent = Object.freeze({ type: "AllBlocksCleared" });

/** Decodes one payload. Throws only ProtocolError (offset + hex preview in the message). */
export function decodeBatch(bytes: Uint8Array): VllmKvEventBatch {
  const r = new MsgpackReader(bytes);
  const n = r.tryArrayHeader("batch");
  let batch: VllmKvEventBatch;
  if (n >= 0) {
    if (n !== 2 && n !== 3) r.fail(`batch: expected [ts, events] or [ts, events, data_parallel_rank], got ${n} elements`, 0);
    const ts = readTs(r);
    const events = readEvents(r);
    const dataParallelRank = n === 3 ? readRank(r) : null;
    batch = { ts, events, dataParallelRank };
  } else {
    const m = r.tryMapHeader("batch");
    if (m < 0) r.fail(`batch: expected array or map, got ${typeName(r.peek("batch"))}`);
    batch = readBatchMap(r, m);
  }
  if (!r.atEnd()) r.fail(`${r.end - r.pos} trailing bytes after the batch`);
  return batch;
}

function readTs(r: MsgpackReader): number {
  const at = r.pos;
  const ts = r.number("ts");
  if (!Number.isFinite(ts)) r.fail(`ts: expected a finite number, got ${ts}`, at);
  return ts;
}

function readRank(r: MsgpackReader): number | null {
  return r.nil("data_parallel_rank") ? null : r.intIn("data_parallel_rank", 0, Number.MAX_SAFE_INTEGER);
}

/** Map-encoded batch (vLLM without array_like): keys in any order, rank optional. */
function readBatchMap(r: MsgpackReader, count: number): VllmKvEventBatch {
  let ts: number | undefined;
  let events: VllmKvEvent[] | undefined;
  let dataParallelRank: number | null = null;
  let seen = 0;
  for (let i = 0; i < count; i++) {
    const at = r.pos;
    const id = r.key(BATCH_KEYS, "batch key");
    if (id >= 0) {
      if (seen & (1 << id)) r.fail(`batch: duplicate key "${BATCH_KEYS.names[id]}"`, at);
      seen |= 1 << id;
    }
    if (id === 0) ts = readTs(r);
    else if (id === 1) events = readEvents(r);
    else if (id === 2) dataParallelRank = readRank(r);
    else r.skip("unknown batch field");
  }
  if (ts === undefined) r.fail("batch map: missing ts", 0);
  if (events === undefined) r.fail("batch map: missing events", 0);
  return { ts, events, dataParallelRank };
}

function readEvents(r: MsgpackReader): VllmKvEvent[] {
  const n = r.arrayHeader("events");
  const events = new Array<VllmKvEvent>(n);
  for (let i = 0; i < n; i++) events[i] = readEvent(r);
  return events;
}

function readEvent(r: MsgpackReader): VllmKvEvent {
  const at = r.pos;
  const mapCount = r.tryMapHeader("event");
  if (mapCount >= 0) return readMapEvent(r, mapCount, at);
  const arrayCount = r.tryArrayHeader("event");
  if (arrayCount >= 0) return readPositionalEvent(r, arrayCount, at);
  return r.fail(`event: expected map or array, got ${typeName(r.peek("event"))}`);
}

/** Reads the type tag string; unknown tags fail naming the tag. */
function readTag(r: MsgpackReader): number {
  const at = r.pos;
  const tag = r.key(TAGS, "event type");
  if (tag < 0) {
    r.pos = at;
    r.fail(`event type: unknown "${r.str("event type")}" (expected BlockStored, BlockRemoved or AllBlocksCleared)`, at);
  }
  return tag;
}

function readMapEvent(r: MsgpackReader, count: number, at: number): VllmKvEvent {
  if (count === 0) r.fail("event map: empty, expected a \"type\" key first", at);
  const keyAt = r.pos;
  if (r.key(EVENT_KEYS, "event key") !== F.type) r.fail("event map: first key must be \"type\"", keyAt);
  const tag = readTag(r);
  const allowed = tag === TAG_STORED ? STORED_FIELDS : tag === TAG_REMOVED ? REMOVED_FIELDS : 0;
  const f = new EventFields();
  let seen = 1 << F.type;
  for (let i = 1; i < count; i++) {
    const kAt = r.pos;
    const id = r.key(EVENT_KEYS, "event key");
    if (id >= 0) {
      if (seen & (1 << id)) r.fail(`event map: duplicate key "${EVENT_KEYS.names[id]}"`, kAt);
      seen |= 1 << id;
    }
    if (id >= 0 && allowed & (1 << id)) readField(r, id, f);
    else r.skip("unknown event field");
  }
  return build(r, tag, f, at);
}

function readPositionalEvent(r: MsgpackReader, count: number, at: number): VllmKvEvent {
  if (count === 0) r.fail("positional event: empty array, expected a type tag first", at);
  const tag = readTag(r);
  const order = tag === TAG_STORED ? STORED_POSITIONAL : tag === TAG_REMOVED ? REMOVED_POSITIONAL : [];
  const required = tag === TAG_STORED ? 5 : tag === TAG_REMOVED ? 2 : 1;
  if (count < required) {
    const name = TAGS.names[tag]!;
    r.fail(`positional ${name}: ${count} elements, needs at least ${required}`, at);
  }
  const f = new EventFields();
  for (let i = 1; i < count; i++) {
    const id = order[i - 1];
    if (id === undefined) r.skip("extra positional field");
    else readField(r, id, f);
  }
  return build(r, tag, f, at);
}

function build(r: MsgpackReader, tag: number, f: EventFields, at: number): VllmKvEvent {
  if (tag === TAG_STORED) {
    if (f.blockHashes === undefined) r.fail("BlockStored: missing block_hashes", at);
    if (f.tokenIds === undefined) r.fail("BlockStored: missing token_ids", at);
    if (f.blockSize === undefined) r.fail("BlockStored: missing block_size", at);
    const e: { -readonly [K in keyof BlockStored]: BlockStored[K] } = {
      type: "BlockStored",
      blockHashes: f.blockHashes,
      parentBlockHash: f.parentBlockHash,
      tokenIds: f.tokenIds,
      blockSize: f.blockSize,
      loraId: f.loraId,
      medium: f.medium,
      loraName: f.loraName,
    };
    if (f.extraKeys !== undefined) e.extraKeys = f.extraKeys;
    if (f.groupIdx !== undefined) e.groupIdx = f.groupIdx;
    if (f.kvCacheSpecKind !== undefined) e.kvCacheSpecKind = f.kvCacheSpecKind;
    if (f.kvCacheSpecSlidingWindow !== undefined) e.kvCacheSpecSlidingWindow = f.kvCacheSpecSlidingWindow;
    if (f.locality !== undefined) e.locality = f.locality;
    if (f.ownership !== undefined) e.ownership = f.ownership;
    if (f.sessionId !== undefined) e.sessionId = f.sessionId;
    return e;
  }
  if (tag === TAG_REMOVED) {
    if (f.blockHashes === undefined) r.fail("BlockRemoved: missing block_hashes", at);
    const e: { -readonly [K in keyof BlockRemoved]: BlockRemoved[K] } = {
      type: "BlockRemoved",
      blockHashes: f.blockHashes,
      medium: f.medium,
    };
    if (f.groupIdx !== undefined) e.groupIdx = f.groupIdx;
    if (f.locality !== undefined) e.locality = f.locality;
    if (f.ownership !== undefined) e.ownership = f.ownership;
    return e;
  }
  return CLEARED;
}
