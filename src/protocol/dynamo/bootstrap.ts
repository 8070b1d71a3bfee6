// Dynamo's prefill/decode rendezvous, as its 1.6.1 mocker speaks it (captured:
// test/fixtures/dynamo-1.6.1/disagg-bootstrap.json). When the prefill worker's card advertises a
// `disaggregated_endpoint`, the frontend sends both legs at once with the same `bootstrap_info`
// {bootstrap_host, bootstrap_port, bootstrap_room, handoff_id}. The decode worker (Destination)
// dials the prefill worker's (Source) bootstrap port and the two hand the KV over:
//
//   D → S  `DMHF`, u32 LE version 1, then the frame Register{role, dp_rank, order, engine_type}
//   S → D  "Registered"; once its prefill holds the KV: Fact SourceHeld{handoff_id, transfer_timing},
//          Action{id 1, ReserveDestination}
//   D → S  ActionAck{1, Accepted}, Fact DestinationReserved{handoff_id, transferable_prompt_tokens}
//   S → D  Action{id 3, ActivateDestination}
//   D → S  ActionAck{3, Applied}
//   S → D  "Complete": the KV has landed
//
// Every frame is u32 LE length | JSON {identity: {handoff_id, bootstrap_room, request_id}, message};
// the room is a u64 written as a JSON number and read from its digits.

export interface BootstrapInfo {
  host: string;
  port: number;
  /** A u64 chosen by the frontend: read losslessly. */
  room: bigint;
  /** The hand-over's uuid (16 bytes in msgpack, its text in JSON); undefined when the frontend sent none. */
  handoffId: string | undefined;
}

const U64_MAX = (1n << 64n) - 1n;

/** A u64 as msgpack decodes it (a number when small, a bigint when not); undefined when it is none. */
export function u64Of(v: unknown): bigint | undefined {
  if (typeof v === "bigint") return v >= 0n && v <= U64_MAX ? v : undefined;
  if (typeof v === "number" && Number.isSafeInteger(v) && v >= 0) return BigInt(v);
  return undefined;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function uuidOf(v: unknown): string | undefined {
  if (typeof v === "string" && UUID.test(v)) return v.toLowerCase();
  if (v instanceof Uint8Array && v.length === 16) {
    const h = Buffer.from(v).toString("hex");
    return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
  }
  return undefined;
}

export type BootstrapParse = { ok: true; value: BootstrapInfo | undefined } | { ok: false; problem: string };

/** `bootstrap_info` of a generate request; null or absent is no rendezvous. */
export function parseBootstrapInfo(v: unknown): BootstrapParse {
  if (v === undefined || v === null) return { ok: true, value: undefined };
  const fail = (problem: string): BootstrapParse => ({ ok: false, problem: `generate request: bootstrap_info${problem}` });
  if (typeof v !== "object" || Array.isArray(v)) return fail(" must be an object");
  const b = v as Record<string, unknown>;
  if (typeof b.bootstrap_host !== "string" || b.bootstrap_host === "") return fail(".bootstrap_host must be a non-empty string");
  const port = b.bootstrap_port;
  if (!(typeof port === "number" && Number.isInteger(port) && port >= 1 && port <= 65535)) return fail(".bootstrap_port must be a port from 1 to 65535");
  const room = u64Of(b.bootstrap_room);
  if (room === undefined) return fail(`.bootstrap_room must be a u64, got ${typeof b.bootstrap_room === "bigint" ? `${b.bootstrap_room}` : JSON.stringify(b.bootstrap_room)}`);
  const handoffId = b.handoff_id === undefined || b.handoff_id === null ? undefined : uuidOf(b.handoff_id);
  if (b.handoff_id !== undefined && b.handoff_id !== null && handoffId === undefined) return fail(".handoff_id must be a uuid");
  return { ok: true, value: { host: b.bootstrap_host, port, room, handoffId } };
}

// --- the hand-over frames -----------------------------------------------------------------------

export const HANDOFF_MAGIC = new TextEncoder().encode("DMHF");
export const HANDOFF_VERSION = 1;
/** Frames are a few hundred bytes; anything far larger is not this protocol. */
export const MAX_HANDOFF_FRAME = 64 * 1024;

export interface HandoffIdentity {
  handoff_id: string;
  bootstrap_room: bigint;
  request_id: string;
}

export interface HandoffFrame {
  identity: HandoffIdentity;
  /** A bare string ("Registered", "Complete") or an object with one key naming the message. */
  message: unknown;
}

/** A message's name: the string itself, or the one key of its object. */
export function messageName(message: unknown): string {
  if (typeof message === "string") return message;
  if (typeof message === "object" && message !== null && !Array.isArray(message)) return Object.keys(message).join("+") || "{}";
  return JSON.stringify(message) ?? String(message);
}

const jsonEncoder = new TextEncoder();
/** A number written from its digits (a u64 past 2^53 stays exact). */
const rawNumber = (digits: string) => (JSON as unknown as { rawJSON(text: string): unknown }).rawJSON(digits);

/** One frame; `hello` puts the magic and version before it (the destination's first frame). */
export function encodeHandoffFrame(frame: HandoffFrame, hello = false): Uint8Array {
  const identity = { ...frame.identity, bootstrap_room: rawNumber(frame.identity.bootstrap_room.toString()) };
  const json = jsonEncoder.encode(JSON.stringify({ identity, message: frame.message }));
  const head = hello ? 12 : 4;
  const out = new Uint8Array(head + json.length);
  const view = new DataView(out.buffer);
  if (hello) {
    out.set(HANDOFF_MAGIC, 0);
    view.setUint32(4, HANDOFF_VERSION, true);
  }
  view.setUint32(head - 4, json.length, true);
  out.set(json, head);
  return out;
}

const keepRoom = (key: string, value: unknown, ctx?: { source?: string }) => (key === "bootstrap_room" && ctx?.source !== undefined && /^\d+$/.test(ctx.source) ? BigInt(ctx.source) : value);
const utf8 = new TextDecoder("utf-8", { fatal: true });

export type HandoffRead = { ok: true; frames: HandoffFrame[] } | { ok: false; problem: string };

/** Splits a byte stream into frames; the first must carry the magic and version when `expectHello`. */
export class HandoffReader {
  private buf: Uint8Array = new Uint8Array(0);
  private helloDue: boolean;

  constructor(expectHello: boolean) {
    this.helloDue = expectHello;
  }

  push(chunk: Uint8Array): HandoffRead {
    const merged = new Uint8Array(this.buf.length + chunk.length);
    merged.set(this.buf, 0);
    merged.set(chunk, this.buf.length);
    let at = 0;
    const frames: HandoffFrame[] = [];
    for (;;) {
      const rest = merged.length - at;
      if (this.helloDue) {
        if (rest < 8) break;
        if (!HANDOFF_MAGIC.every((b, i) => merged[at + i] === b)) return { ok: false, problem: `hand-over stream does not start with DMHF (got 0x${Buffer.from(merged.subarray(at, at + 4)).toString("hex")})` };
        const version = new DataView(merged.buffer, at + 4, 4).getUint32(0, true);
        if (version !== HANDOFF_VERSION) return { ok: false, problem: `hand-over version ${version} (this worker speaks ${HANDOFF_VERSION})` };
        at += 8;
        this.helloDue = false;
        continue;
      }
      if (rest < 4) break;
      const length = new DataView(merged.buffer, at, 4).getUint32(0, true);
      if (length > MAX_HANDOFF_FRAME) return { ok: false, problem: `hand-over frame of ${length} bytes (at most ${MAX_HANDOFF_FRAME})` };
      if (rest < 4 + length) break;
      let parsed: unknown;
      try {
        parsed = JSON.parse(utf8.decode(merged.subarray(at + 4, at + 4 + length)), keepRoom as (k: string, v: unknown) => unknown);
      } catch (err) {
        return { ok: false, problem: `hand-over frame is not JSON: ${(err as Error).message}` };
      }
      const f = parsed as Partial<HandoffFrame> | null;
      const id = f?.identity as Partial<HandoffIdentity> | undefined;
      if (typeof id?.handoff_id !== "string" || typeof id.bootstrap_room !== "bigint" || typeof id.request_id !== "string" || f?.message === undefined) {
        return { ok: false, problem: "hand-over frame lacks identity {handoff_id, bootstrap_room, request_id} or message" };
      }
      frames.push(f as HandoffFrame);
      at += 4 + length;
    }
    this.buf = merged.slice(at);
    return { ok: true, frames };
  }
}
