// Dynamo's ZeroMQ event plane as bytes (captured: test/fixtures/dynamo-1.6.1/kv-events.json): a
// message is `[topic, publisher_id u64 BE, sequence u64 BE, frame]`, the frame `u8 version (1) |
// u32 BE length | msgpack {publisher_id, sequence, published_at (ms), topic, payload (bin)}`, and a
// kv-events payload a msgpack array of RouterEvents (named maps, hashes as uint64). Pure.
import { MsgpackWriter, preEncodeStr } from "../msgpack.ts";

/** What of an engine KV event the router reads (the engine's KvEvent has this shape). */
export type DynamoKvEvent =
  | { readonly kind: "stored"; readonly parentHash: bigint | null; readonly blockHashes: readonly bigint[]; readonly localHashes: readonly bigint[] }
  | { readonly kind: "removed"; readonly blockHashes: readonly bigint[] }
  | { readonly kind: "cleared" };

export const FRAME_VERSION = 1;

/** Dynamo's names of the tiers a worker publishes: G1 and the host tier (G2). */
export type DynamoStorageTier = "device" | "host_pinned";

/** One RouterEvent's worth of an engine event, as the router indexes it. */
export interface DynamoRouterEvent {
  eventId: number;
  tier: DynamoStorageTier;
  event: DynamoKvEvent;
  /** A stored event's first block's position in its sequence (Dynamo's mocker writes it on host stores); nil when absent. */
  startPosition?: number;
}

const K = Object.fromEntries(
  ["worker_id", "storage_tier", "residency_domain", "worker", "event", "event_id", "data", "dp_rank", "stored", "parent_hash", "start_position",
    "blocks", "block_hash", "tokens_hash", "mm_extra_info", "removed", "block_hashes", "cleared", "device", "host_pinned", "publisher_id",
    "sequence", "published_at", "topic", "payload"].map((k) => [k, preEncodeStr(k)]),
) as Record<string, Uint8Array>;

/** The payload: `Vec<RouterEvent>` of one (worker, rank), each event with its storage tier. */
export function encodeRouterEvents(w: MsgpackWriter, workerId: number, dpRank: number, events: readonly DynamoRouterEvent[]): Uint8Array {
  w.reset();
  w.writeArrayHeader(events.length);
  for (const { eventId, tier, event, startPosition } of events) {
    w.writeMapHeader(4);
    w.writeRaw(K.worker_id!);
    w.writeUint(workerId);
    w.writeRaw(K.storage_tier!);
    w.writeRaw(tier === "device" ? K.device! : K.host_pinned!);
    w.writeRaw(K.residency_domain!);
    w.writeRaw(K.worker!);
    w.writeRaw(K.event!);
    w.writeMapHeader(3);
    w.writeRaw(K.event_id!);
    w.writeUint(eventId);
    w.writeRaw(K.data!);
    if (event.kind === "stored") {
      w.writeMapHeader(1);
      w.writeRaw(K.stored!);
      w.writeMapHeader(3);
      w.writeRaw(K.parent_hash!);
      if (event.parentHash === null) w.writeNil();
      else w.writeU64(event.parentHash);
      w.writeRaw(K.start_position!);
      if (startPosition === undefined) w.writeNil();
      else w.writeUint(startPosition);
      w.writeRaw(K.blocks!);
      w.writeArrayHeader(event.blockHashes.length);
      for (let i = 0; i < event.blockHashes.length; i++) {
        w.writeMapHeader(3);
        w.writeRaw(K.block_hash!);
        w.writeU64(event.blockHashes[i]!);
        w.writeRaw(K.tokens_hash!);
        w.writeU64(event.localHashes[i]!);
        w.writeRaw(K.mm_extra_info!);
        w.writeNil();
      }
    } else if (event.kind === "removed") {
      w.writeMapHeader(1);
      w.writeRaw(K.removed!);
      w.writeMapHeader(1);
      w.writeRaw(K.block_hashes!);
      w.writeArrayHeader(event.blockHashes.length);
      for (const h of event.blockHashes) w.writeU64(h);
    } else {
      w.writeRaw(K.cleared!);
    }
    w.writeRaw(K.dp_rank!);
    w.writeUint(dpRank);
  }
  return w.finish();
}

/** The four frames of one event-plane message. */
export function encodeEventMessage(w: MsgpackWriter, topic: string, publisherId: number, sequence: number, publishedAtMs: number, payload: Uint8Array): Uint8Array[] {
  w.reset();
  w.writeMapHeader(5);
  w.writeRaw(K.publisher_id!);
  w.writeUint(publisherId);
  w.writeRaw(K.sequence!);
  w.writeUint(sequence);
  w.writeRaw(K.published_at!);
  w.writeUint(publishedAtMs);
  w.writeRaw(K.topic!);
  w.writeStr(topic);
  w.writeRaw(K.payload!);
  w.writeBin(payload);
  const envelope = w.finish();
  const frame = new Uint8Array(5 + envelope.length);
  const view = new DataView(frame.buffer);
  view.setUint8(0, FRAME_VERSION);
  view.setUint32(1, envelope.length);
  frame.set(envelope, 5);
  const u64 = (n: number) => {
    const b = new Uint8Array(8);
    new DataView(b.buffer).setBigUint64(0, BigInt(n));
    return b;
  };
  return [new TextEncoder().encode(topic), u64(publisherId), u64(sequence), frame];
}
