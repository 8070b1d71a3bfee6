// Router event stream codec: what the mocker relay (direct mode) and the state agent
// publish and the frontend router indexes. Frames: [topic, cursor u64 BE (seq-frame.ts), payload].
//
// Payload (msgpack), designed here; positional for compactness, strings for the enums so a tap
// can read it without a table:
//   payload     = [version = 1, [event, ...]]
//   event       = [holder, tier, kind, blocks, parent_hash]          (exactly 5 elements)
//   holder      = [worker_id: str, dp_rank: uint]                    a worker's own residency
//               | cache_owner_id: str                                a CacheOwner's residency
//   tier        = "device" | "host" | "disk"
//   kind        = "stored" | "removed" | "cleared"
//   blocks      = [[seq_hash: u64, local_hash: u64], ...]            hashes always written `cf`
//   parent_hash = u64 | nil     sequence hash the first stored block chains from; nil otherwise
// Rules (both directions): `cleared` has no blocks; only `stored` has a parent; `stored` has at
// least one block. Hashes must be unsigned ints (no signed/bytes forms: this format is ours).
import { encodeError, KeyTable, MsgpackReader, MsgpackWriter, preEncodeStr, typeName } from "./msgpack.ts";
import { decodeSeq } from "./seq-frame.ts";

export const ROUTER_EVENTS_VERSION = 1;

export const RouterTier = { Device: "device", Host: "host", Disk: "disk" } as const;
export type RouterTier = (typeof RouterTier)[keyof typeof RouterTier];

export const RouterEventKind = { Stored: "stored", Removed: "removed", Cleared: "cleared" } as const;
export type RouterEventKind = (typeof RouterEventKind)[keyof typeof RouterEventKind];

/** Whose residency changed: one (worker, dp rank), or one CacheOwner. */
export type RouterEventHolder = { readonly workerId: string; readonly dpRank: number } | { readonly cacheOwnerId: string };

export interface RouterBlock {
  readonly seqHash: bigint;
  readonly localHash: bigint;
}

export interface RouterEvent {
  readonly holder: RouterEventHolder;
  readonly tier: RouterTier;
  readonly kind: RouterEventKind;
  readonly blocks: readonly RouterBlock[];
  readonly parentHash: bigint | null;
}

const TIERS: readonly RouterTier[] = [RouterTier.Device, RouterTier.Host, RouterTier.Disk];
const KINDS: readonly RouterEventKind[] = [RouterEventKind.Stored, RouterEventKind.Removed, RouterEventKind.Cleared];
const TIER_TABLE = new KeyTable(TIERS);
const KIND_TABLE = new KeyTable(KINDS);
const TIER_BYTES = new Map(TIERS.map((t) => [t, preEncodeStr(t)]));
const KIND_BYTES = new Map(KINDS.map((k) => [k, preEncodeStr(k)]));

/** The shape rule shared by encoder and decoder; returns the violation or undefined. */
function ruleViolation(kind: RouterEventKind, blockCount: number, hasParent: boolean): string | undefined {
  if (kind === "cleared" && blockCount > 0) return "a cleared event carries no blocks";
  if (kind !== "stored" && hasParent) return `a ${kind} event has no parent_hash`;
  if (kind === "stored" && blockCount === 0) return "a stored event needs at least one block";
  return undefined;
}

/** Owns one reused buffer; `encode` returns a fresh copy. Not reentrant. */
export class RouterEventEncoder {
  private readonly w = new MsgpackWriter(4096);

  encode(events: readonly RouterEvent[]): Uint8Array {
    const w = this.w;
    w.reset();
    w.writeArrayHeader(2);
    w.writeUint(ROUTER_EVENTS_VERSION);
    w.writeArrayHeader(events.length);
    for (const e of events) this.writeEvent(e);
    return w.finish();
  }

  private writeEvent(e: RouterEvent): void {
    const w = this.w;
    const tier = TIER_BYTES.get(e.tier);
    const kind = KIND_BYTES.get(e.kind);
    if (tier === undefined) throw encodeError(`unknown tier ${String(e.tier)}`);
    if (kind === undefined) throw encodeError(`unknown event kind ${String(e.kind)}`);
    const violation = ruleViolation(e.kind, e.blocks.length, e.parentHash !== null);
    if (violation) throw encodeError(violation);
    w.writeArrayHeader(5);
    if ("cacheOwnerId" in e.holder) {
      if (e.holder.cacheOwnerId === "") throw encodeError("cache_owner_id must not be empty");
      w.writeStr(e.holder.cacheOwnerId);
    } else {
      if (e.holder.workerId === "") throw encodeError("worker_id must not be empty");
      w.writeArrayHeader(2);
      w.writeStr(e.holder.workerId);
      w.writeUint(e.holder.dpRank);
    }
    w.writeRaw(tier);
    w.writeRaw(kind);
    w.writeArrayHeader(e.blocks.length);
    for (const b of e.blocks) {
      w.writeArrayHeader(2);
      w.writeU64(b.seqHash);
      w.writeU64(b.localHash);
    }
    if (e.parentHash === null) w.writeNil();
    else w.writeU64(e.parentHash);
  }
}

const shared = new RouterEventEncoder();

/** One router-stream payload (a fresh Uint8Array). Throws KvcrError ENCODE_INVALID for invalid events. */
export function encodeRouterEvents(events: readonly RouterEvent[]): Uint8Array {
  return shared.encode(events);
}

/** Decodes one payload. Throws only ProtocolError (byte offset + hex preview in the message). */
export function decodeRouterEvents(bytes: Uint8Array): RouterEvent[] {
  const r = new MsgpackReader(bytes);
  const n = r.arrayHeader("router payload");
  if (n !== 2) r.fail(`router payload: expected [version, events], got ${n} elements`, 0);
  const versionAt = r.pos;
  const version = r.int("router payload version");
  if (version !== ROUTER_EVENTS_VERSION) {
    r.fail(`router payload: unsupported version ${version} (this build reads ${ROUTER_EVENTS_VERSION})`, versionAt);
  }
  const count = r.arrayHeader("router events");
  const events = new Array<RouterEvent>(count);
  for (let i = 0; i < count; i++) events[i] = readEvent(r);
  if (!r.atEnd()) r.fail(`${r.end - r.pos} trailing bytes after the router payload`);
  return events;
}

/** One stream message `[topic, cursor, payload]` as received by a SUB. Throws on any other frame count or bad frame. */
export function decodeRouterEventMessage(frames: readonly Uint8Array[]): { cursor: bigint; events: RouterEvent[] } {
  if (frames.length !== 3) throw new Error(`expected 3 frames [topic, cursor, payload], got ${frames.length}`);
  return { cursor: decodeSeq(frames[1]!), events: decodeRouterEvents(frames[2]!) };
}

function readEvent(r: MsgpackReader): RouterEvent {
  const at = r.pos;
  const n = r.arrayHeader("router event");
  if (n !== 5) r.fail(`router event: expected [holder, tier, kind, blocks, parent_hash], got ${n} elements`, at);
  const holder = readHolder(r);
  const tier = TIERS[readEnum(r, TIER_TABLE, "tier")]!;
  const kind = KINDS[readEnum(r, KIND_TABLE, "kind")]!;
  const blockCount = r.arrayHeader("blocks");
  const blocks = new Array<RouterBlock>(blockCount);
  for (let i = 0; i < blockCount; i++) {
    const pairAt = r.pos;
    if (r.arrayHeader("block") !== 2) r.fail("block: expected [seq_hash, local_hash]", pairAt);
    const seqHash = readU64(r, "seq_hash");
    blocks[i] = { seqHash, localHash: readU64(r, "local_hash") };
  }
  const parentHash = r.nil("parent_hash") ? null : readU64(r, "parent_hash");
  const violation = ruleViolation(kind, blockCount, parentHash !== null);
  if (violation) r.fail(`router event: ${violation}`, at);
  return { holder, tier, kind, blocks, parentHash };
}

function readHolder(r: MsgpackReader): RouterEventHolder {
  const at = r.pos;
  const kind = typeName(r.peek("holder"));
  if (kind === "string") {
    const cacheOwnerId = r.str("cache_owner_id");
    if (cacheOwnerId === "") r.fail("cache_owner_id: empty", at);
    return { cacheOwnerId };
  }
  if (kind !== "array") r.fail(`holder: expected [worker_id, dp_rank] or cache_owner_id, got ${kind}`);
  if (r.arrayHeader("holder") !== 2) r.fail("holder: expected [worker_id, dp_rank]", at);
  const idAt = r.pos;
  const workerId = r.str("worker_id");
  if (workerId === "") r.fail("worker_id: empty", idAt);
  return { workerId, dpRank: r.intIn("dp_rank", 0, Number.MAX_SAFE_INTEGER) };
}

function readEnum(r: MsgpackReader, table: KeyTable, what: string): number {
  const at = r.pos;
  const id = r.key(table, what);
  if (id < 0) {
    r.pos = at;
    r.fail(`${what}: unknown "${r.str(what)}" (expected ${table.names.join(", ")})`, at);
  }
  return id;
}

/** Unsigned int forms only: this stream is ours and always writes `cf`. */
function readU64(r: MsgpackReader, what: string): bigint {
  const b = r.peek(what);
  if (b >= 0x80 && (b < 0xcc || b > 0xcf)) {
    r.fail(`${what}: expected unsigned int, got ${b >= 0xd0 && b <= 0xd3 ? "signed int" : b >= 0xe0 ? "negative int" : typeName(b)}`);
  }
  return r.hash(what);
}
