// What frontend replicas send one another over NATS so that they route as one (router replica
// sync): batches of active-request lifecycle events, on one subject per namespace. Our own format
// (msgpack, positional), described in docs/replica-sync.md:
//   batch  = [version = 1, router_id: str, batch_seq: uint, sent_at_ms: float64, live, [event, ...]]
//   live   = nil | [request_id: uint, ...]     every request of the sender still active when sent
//   event  = ["add", request_id, worker_id: str, dp_rank: uint, [seq_hash: u64, ...], prefill_tokens: uint]
//          | ["prefill_completed" | "free", request_id, worker_id: str, dp_rank: uint]
import { encodeError, KeyTable, MsgpackReader, MsgpackWriter, preEncodeStr } from "./msgpack.ts";

export const REPLICA_SYNC_VERSION = 1;

export const REPLICA_EVENT_KINDS = ["add", "prefill_completed", "free"] as const;
export type ReplicaEventKind = (typeof REPLICA_EVENT_KINDS)[number];

interface EventBase {
  /** The sender's id for one routed attempt (unique within its router id). */
  readonly requestId: number;
  readonly workerId: string;
  readonly dpRank: number;
}

export type ReplicaEvent =
  | (EventBase & { readonly kind: "add"; readonly hashes: ArrayLike<bigint>; readonly prefillTokens: number })
  | (EventBase & { readonly kind: "prefill_completed" | "free" });

export interface ReplicaBatch {
  readonly routerId: string;
  /** From 1 per sender: a gap is a lost batch. */
  readonly seq: number;
  /** The sender's wall clock when it sent the batch (sync lag = arrival − this). */
  readonly sentAtMs: number;
  /** Heartbeats carry the sender's active request ids (a request missing there was freed). */
  readonly live: readonly number[] | null;
  readonly events: readonly ReplicaEvent[];
}

/**
 * The subject of a namespace's replica sync. A namespace may hold '.' and '_', so both are escaped
 * ('_' → "_u", '.' → "_d"): distinct namespaces never share a subject, and none has an empty token.
 */
export function replicaSyncSubject(namespace: string): string {
  return `kvcr.${namespace.replace(/_/g, "_u").replace(/\./g, "_d")}.router.active_sequences_events`;
}

const KIND_TABLE = new KeyTable(REPLICA_EVENT_KINDS);
const KIND_BYTES = new Map(REPLICA_EVENT_KINDS.map((k) => [k, preEncodeStr(k)]));

/** Bytes an add costs beyond its hashes (kind, ids, worker id, rank, counts), an upper bound for sizing batches. */
export function encodedSizeBound(e: ReplicaEvent): number {
  return 64 + e.workerId.length * 3 + (e.kind === "add" ? 9 * e.hashes.length : 0);
}

/** Owns one reused buffer; `encode` returns a fresh copy. Not reentrant. */
export class ReplicaBatchEncoder {
  private readonly w = new MsgpackWriter(16_384);

  encode(b: ReplicaBatch): Uint8Array {
    const w = this.w;
    w.reset();
    if (b.routerId === "") throw encodeError("router_id must not be empty");
    w.writeArrayHeader(6);
    w.writeUint(REPLICA_SYNC_VERSION);
    w.writeStr(b.routerId);
    w.writeUint(b.seq);
    w.writeFloat64(b.sentAtMs);
    if (b.live === null) w.writeNil();
    else {
      w.writeArrayHeader(b.live.length);
      for (const id of b.live) w.writeUint(id);
    }
    w.writeArrayHeader(b.events.length);
    for (const e of b.events) {
      w.writeArrayHeader(e.kind === "add" ? 6 : 4);
      w.writeRaw(KIND_BYTES.get(e.kind)!);
      w.writeUint(e.requestId);
      w.writeStr(e.workerId);
      w.writeUint(e.dpRank);
      if (e.kind === "add") {
        w.writeArrayHeader(e.hashes.length);
        for (let i = 0; i < e.hashes.length; i++) w.writeU64(e.hashes[i]!);
        w.writeUint(e.prefillTokens);
      }
    }
    return w.finish();
  }
}

/** Decodes one message. Throws only ProtocolError (byte offset + hex preview in the message). */
export function decodeReplicaBatch(bytes: Uint8Array): ReplicaBatch {
  const r = new MsgpackReader(bytes);
  const n = r.arrayHeader("replica batch");
  if (n !== 6) r.fail(`replica batch: expected [version, router_id, batch_seq, sent_at_ms, live, events], got ${n} elements`, 0);
  const versionAt = r.pos;
  const version = r.int("version");
  if (version !== REPLICA_SYNC_VERSION) r.fail(`replica batch: unsupported version ${version} (this build reads ${REPLICA_SYNC_VERSION})`, versionAt);
  const routerId = r.str("router_id");
  if (routerId === "") r.fail("router_id: empty");
  const seq = r.intIn("batch_seq", 1, Number.MAX_SAFE_INTEGER);
  const sentAtMs = r.number("sent_at_ms");
  let live: number[] | null = null;
  if (!r.nil("live")) {
    const count = r.arrayHeader("live");
    live = new Array<number>(count);
    for (let i = 0; i < count; i++) live[i] = r.intIn("live request_id", 0, Number.MAX_SAFE_INTEGER);
  }
  const count = r.arrayHeader("events");
  const events = new Array<ReplicaEvent>(count);
  for (let i = 0; i < count; i++) events[i] = readEvent(r);
  if (!r.atEnd()) r.fail(`${r.end - r.pos} trailing bytes after the replica batch`);
  return { routerId, seq, sentAtMs, live, events };
}

function readEvent(r: MsgpackReader): ReplicaEvent {
  const at = r.pos;
  const n = r.arrayHeader("replica event");
  const kindAt = r.pos;
  const id = r.key(KIND_TABLE, "kind");
  if (id < 0) {
    r.pos = kindAt;
    r.fail(`kind: unknown "${r.str("kind")}" (expected ${REPLICA_EVENT_KINDS.join(", ")})`, kindAt);
  }
  const kind = REPLICA_EVENT_KINDS[id]!;
  const want = kind === "add" ? 6 : 4;
  if (n !== want) r.fail(`${kind} event: expected ${want} elements, got ${n}`, at);
  const requestId = r.intIn("request_id", 0, Number.MAX_SAFE_INTEGER);
  const workerId = r.str("worker_id");
  if (workerId === "") r.fail("worker_id: empty");
  const dpRank = r.intIn("dp_rank", 0, Number.MAX_SAFE_INTEGER);
  if (kind !== "add") return { kind, requestId, workerId, dpRank };
  const hashCount = r.arrayHeader("seq_hashes");
  const hashes = new BigUint64Array(hashCount);
  for (let i = 0; i < hashCount; i++) hashes[i] = r.hash("seq_hash");
  return { kind, requestId, workerId, dpRank, hashes, prefillTokens: r.intIn("prefill_tokens", 0, Number.MAX_SAFE_INTEGER) };
}
