// Allocation-light decoding of one KV-event payload into a reused FlatBatch, for the
// state agent's hot path: block hashes land as 32-bit word pairs (no bigint per block), token ids
// in one Uint32Array (no number[] per event), media and "kvcr" as interned strings. decode.ts stays
// the one definition of what is valid: decodeFlat reads the batch layout vLLM sends (`[ts, events,
// dp_rank?]`, map or positional events) and returns false on anything else or on any error, and
// the caller then runs decodeBatch (which accepts the rest, or throws the ProtocolError with its
// offset) and fills the FlatBatch from its result with flatFromBatch. Fields the agent does not use
// are read by decode-fields.ts's own readers, so their checks are identical.
import { KeyTable, MsgpackReader } from "../msgpack.ts";
import { EVENT_KEYS, EventFields, F, readField, REMOVED_FIELDS, REMOVED_POSITIONAL, STORED_FIELDS, STORED_POSITIONAL } from "./decode-fields.ts";
import type { VllmKvEventBatch } from "./types.ts";

export const FLAT_STORED = 0;
export const FLAT_REMOVED = 1;
export const FLAT_CLEARED = 2;

/** Platform byte order: word pairs are (low, high) on little-endian, as a Uint32Array view of a BigUint64Array sees them. */
const LE = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;
const TAGS = new KeyTable(["BlockStored", "BlockRemoved", "AllBlocksCleared"]);
const MEDIA = new KeyTable(["GPU", "CPU", "CPU_PINNED", "DISK", "STORAGE"]);
const OWNERSHIPS = new KeyTable(["kvcr"]);
const MAX_SAFE = Number.MAX_SAFE_INTEGER;
const scratch64 = new BigUint64Array(1);
const scratchWords = new Uint32Array(scratch64.buffer);

/** One decoded batch in flat, reused storage. Per event i: kind, medium, ownership, and ranges. */
export class FlatBatch {
  ts = 0;
  dataParallelRank: number | null = null;
  count = 0;
  kind = new Uint8Array(16);
  medium: (string | null)[] = [];
  ownership: (string | undefined)[] = [];
  /** A stored event's LoRA adapter (lora_name) and whether it named one only by lora_id. */
  loraName: (string | null)[] = [];
  loraIdOnly: boolean[] = [];
  blockSize = new Int32Array(16);
  /** First hash (index into hash pairs) and count of each event's block_hashes. */
  hashStart = new Int32Array(16);
  hashCount = new Int32Array(16);
  /** Parent hash pair index, or -1 for none. */
  parent = new Int32Array(16);
  tokenStart = new Int32Array(16);
  tokenCount = new Int32Array(16);
  /** Hash pairs: words[2k], words[2k+1] in platform order (see LE). */
  words = new Uint32Array(512);
  hashes = 0;
  tokens = new Uint32Array(8192);
  tokenTotal = 0;

  reset(): void {
    this.count = 0;
    this.hashes = 0;
    this.tokenTotal = 0;
    this.dataParallelRank = null;
  }

  /** Starts event `count` (grows per-event arrays) and returns its index. */
  beginEvent(kind: number): number {
    const i = this.count++;
    if (i >= this.kind.length) {
      const len = this.kind.length * 2;
      this.kind = grow(this.kind, len);
      this.blockSize = grow(this.blockSize, len);
      this.hashStart = grow(this.hashStart, len);
      this.hashCount = grow(this.hashCount, len);
      this.parent = grow(this.parent, len);
      this.tokenStart = grow(this.tokenStart, len);
      this.tokenCount = grow(this.tokenCount, len);
    }
    this.kind[i] = kind;
    this.medium[i] = null;
    this.ownership[i] = undefined;
    this.loraName[i] = null;
    this.loraIdOnly[i] = false;
    this.blockSize[i] = 0;
    this.hashStart[i] = this.hashes;
    this.hashCount[i] = 0;
    this.parent[i] = -1;
    this.tokenStart[i] = this.tokenTotal;
    this.tokenCount[i] = 0;
    return i;
  }

  /** Appends a hash pair from big-endian high/low words; returns its index. */
  pushWords(hi: number, lo: number): number {
    const k = this.hashes++;
    if (2 * k + 2 > this.words.length) this.words = grow(this.words, this.words.length * 2);
    this.words[2 * k] = LE ? lo : hi;
    this.words[2 * k + 1] = LE ? hi : lo;
    return k;
  }

  pushHash(h: bigint): number {
    scratch64[0] = h;
    const k = this.hashes++;
    if (2 * k + 2 > this.words.length) this.words = grow(this.words, this.words.length * 2);
    this.words[2 * k] = scratchWords[0]!;
    this.words[2 * k + 1] = scratchWords[1]!;
    return k;
  }

  /** Room for `n` more tokens; returns the tokens array to write into from `tokenTotal`. */
  reserveTokens(n: number): Uint32Array {
    if (this.tokenTotal + n > this.tokens.length) this.tokens = grow(this.tokens, Math.max(this.tokens.length * 2, this.tokenTotal + n));
    return this.tokens;
  }
}

function grow<T extends Uint8Array | Int32Array | Uint32Array>(a: T, len: number): T {
  const b = new (a.constructor as new (n: number) => T)(len);
  b.set(a as never);
  return b;
}

/** Fills `out` from a batch decodeBatch produced (the fallback path). */
export function flatFromBatch(batch: VllmKvEventBatch, out: FlatBatch): void {
  out.reset();
  out.ts = batch.ts;
  out.dataParallelRank = batch.dataParallelRank;
  for (const e of batch.events) {
    if (e.type === "AllBlocksCleared") {
      out.beginEvent(FLAT_CLEARED);
      continue;
    }
    const i = out.beginEvent(e.type === "BlockStored" ? FLAT_STORED : FLAT_REMOVED);
    out.medium[i] = e.medium;
    out.ownership[i] = e.ownership;
    for (const h of e.blockHashes) out.pushHash(h);
    out.hashCount[i] = e.blockHashes.length;
    if (e.type === "BlockStored") {
      out.loraName[i] = e.loraName;
      out.loraIdOnly[i] = e.loraName === null && e.loraId !== null;
      out.blockSize[i] = e.blockSize;
      if (e.parentBlockHash !== null) out.parent[i] = out.pushHash(e.parentBlockHash);
      const tokens = out.reserveTokens(e.tokenIds.length);
      for (let t = 0; t < e.tokenIds.length; t++) tokens[out.tokenTotal + t] = e.tokenIds[t]!;
      out.tokenTotal += e.tokenIds.length;
      out.tokenCount[i] = e.tokenIds.length;
    }
  }
}

/** Decodes the common layout into `out`; false = not read here (use decodeBatch + flatFromBatch). */
export function decodeFlat(bytes: Uint8Array, out: FlatBatch): boolean {
  out.reset();
  try {
    const r = new MsgpackReader(bytes);
    const n = r.tryArrayHeader("batch");
    if (n !== 2 && n !== 3) return false;
    const ts = r.number("ts");
    if (!Number.isFinite(ts)) return false;
    out.ts = ts;
    const count = r.arrayHeader("events");
    const scratch = new EventFields();
    for (let e = 0; e < count; e++) if (!readEvent(r, out, scratch)) return false;
    if (n === 3) out.dataParallelRank = r.nil("data_parallel_rank") ? null : r.intIn("data_parallel_rank", 0, MAX_SAFE);
    return r.atEnd();
  } catch {
    return false;
  }
}

function readEvent(r: MsgpackReader, out: FlatBatch, scratch: EventFields): boolean {
  const m = r.tryMapHeader("event");
  if (m >= 0) {
    if (m === 0 || r.key(EVENT_KEYS, "event key") !== F.type) return false;
    const tag = r.key(TAGS, "event type");
    if (tag < 0) return false;
    const i = out.beginEvent(tag);
    const allowed = tag === FLAT_STORED ? STORED_FIELDS : tag === FLAT_REMOVED ? REMOVED_FIELDS : 0;
    let seen = 1 << F.type;
    for (let k = 1; k < m; k++) {
      const id = r.key(EVENT_KEYS, "event key");
      if (id >= 0) {
        if (seen & (1 << id)) return false;
        seen |= 1 << id;
      }
      if (id >= 0 && allowed & (1 << id)) readFlatField(r, id, out, i, scratch);
      else r.skip("unknown event field");
    }
    return complete(tag, seen);
  }
  const a = r.tryArrayHeader("event");
  if (a < 1) return false;
  const tag = r.key(TAGS, "event type");
  if (tag < 0) return false;
  const order = tag === FLAT_STORED ? STORED_POSITIONAL : tag === FLAT_REMOVED ? REMOVED_POSITIONAL : [];
  if (a < (tag === FLAT_STORED ? 5 : tag === FLAT_REMOVED ? 2 : 1)) return false;
  const i = out.beginEvent(tag);
  for (let k = 1; k < a; k++) {
    const id = order[k - 1];
    if (id === undefined) r.skip("extra positional field");
    else readFlatField(r, id, out, i, scratch);
  }
  return true;
}

/** Required fields present (decode.ts's build() rules). */
function complete(tag: number, seen: number): boolean {
  if (tag === FLAT_STORED) return (seen & (1 << F.blockHashes)) !== 0 && (seen & (1 << F.tokenIds)) !== 0 && (seen & (1 << F.blockSize)) !== 0;
  if (tag === FLAT_REMOVED) return (seen & (1 << F.blockHashes)) !== 0;
  return true;
}

function readFlatField(r: MsgpackReader, id: number, out: FlatBatch, i: number, scratch: EventFields): void {
  switch (id) {
    case F.blockHashes: {
      const n = r.arrayHeader("block_hashes");
      out.hashStart[i] = out.hashes;
      for (let k = 0; k < n; k++) readHash(r, out);
      out.hashCount[i] = n;
      return;
    }
    case F.parentBlockHash:
      out.parent[i] = r.nil("parent_block_hash") ? -1 : readHash(r, out);
      return;
    case F.tokenIds: {
      const n = r.arrayHeader("token_ids");
      const tokens = out.reserveTokens(n);
      const bytes = r.bytes;
      const end = r.end;
      let p = r.pos;
      let t = out.tokenTotal;
      // The unsigned forms msgspec writes, inline; anything else through the checked reader.
      for (let k = 0; k < n; k++) {
        const b = bytes[p]!;
        if (b < 0x80) {
          tokens[t++] = b;
          p += 1;
        } else if (b === 0xcd && p + 3 <= end) {
          tokens[t++] = (bytes[p + 1]! << 8) | bytes[p + 2]!;
          p += 3;
        } else if (b === 0xce && p + 5 <= end) {
          tokens[t++] = (bytes[p + 1]! << 24) | (bytes[p + 2]! << 16) | (bytes[p + 3]! << 8) | bytes[p + 4]!;
          p += 5;
        } else {
          r.pos = p;
          tokens[t++] = r.intIn("token_ids element", 0, 0xffff_ffff);
          p = r.pos;
        }
      }
      r.pos = p;
      out.tokenStart[i] = out.tokenTotal;
      out.tokenCount[i] = n;
      out.tokenTotal = t;
      return;
    }
    case F.blockSize:
      out.blockSize[i] = r.intIn("block_size", 1, 0x7fff_ffff);
      return;
    case F.medium: {
      if (r.nil("medium")) return;
      const at = r.pos;
      const m = r.key(MEDIA, "medium");
      if (m >= 0) out.medium[i] = MEDIA.names[m]!;
      else {
        r.pos = at;
        out.medium[i] = r.str("medium");
      }
      return;
    }
    case F.loraName:
      out.loraName[i] = r.strOrNil("lora_name");
      if (out.loraName[i] !== null) out.loraIdOnly[i] = false;
      return;
    case F.loraId:
      // lora_id without lora_name (older vLLM) names an adapter the reader cannot hash for.
      if (r.intOrNil("lora_id") !== null && out.loraName[i] === null) out.loraIdOnly[i] = true;
      return;
    case F.ownership: {
      if (r.nil("ownership")) return;
      const at = r.pos;
      if (r.key(OWNERSHIPS, "ownership") === 0) out.ownership[i] = "kvcr";
      else {
        r.pos = at;
        out.ownership[i] = r.str("ownership");
      }
      return;
    }
    default:
      readField(r, id, scratch); // validated exactly as decode.ts does, value unused
  }
}

/** One hash as a word pair: 8-byte ints inline, every other form through MsgpackReader.hash. */
function readHash(r: MsgpackReader, out: FlatBatch): number {
  const p = r.pos;
  const b = r.bytes[p];
  if ((b === 0xcf || b === 0xd3) && p + 9 <= r.end) {
    r.pos = p + 9;
    return out.pushWords(r.view.getUint32(p + 1), r.view.getUint32(p + 5));
  }
  return out.pushHash(r.hash("block hash"));
}
