// Dynamo's TCP request and response planes as bytes (captured: test/fixtures/dynamo-1.6.1/
// request-plane.json, response-plane.json). A request frame is `u16 path_len | path | u16
// headers_len | headers (JSON map) | u32 payload_len | payload`, answered by an ack `u32 len |
// text` (0 = accepted); the payload and every response-plane frame are two-part messages `u64
// header_len | u64 body_len | u64 checksum (0) | header | body`. Pure parsers that take bytes as
// they arrive and never throw past a malformed frame: they return a problem instead.

export interface RequestFrame {
  path: string;
  headers: Record<string, string>;
  payload: Uint8Array;
}

export interface TwoPart {
  header: Uint8Array;
  body: Uint8Array;
}

/** The largest request frame taken (Dynamo's DYN_TCP_MAX_MESSAGE_SIZE default, 32 MiB). */
export const MAX_FRAME_BYTES = 32 << 20;

export type Parsed<T> = { ok: true; value: T; used: number } | { ok: false; problem: string } | undefined;

const utf8 = new TextDecoder("utf-8", { fatal: true });

/** One request frame from the start of `buf`; undefined while it is incomplete. */
export function parseRequestFrame(buf: Uint8Array): Parsed<RequestFrame> {
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  if (buf.length < 2) return undefined;
  const pathLen = view.getUint16(0);
  if (buf.length < 4 + pathLen) return undefined;
  const headersLen = view.getUint16(2 + pathLen);
  const payloadAt = 4 + pathLen + headersLen;
  if (buf.length < payloadAt + 4) return undefined;
  const payloadLen = view.getUint32(payloadAt);
  if (payloadAt + 4 + payloadLen > MAX_FRAME_BYTES) return { ok: false, problem: `request frame of ${payloadAt + 4 + payloadLen} bytes exceeds the ${MAX_FRAME_BYTES}-byte limit` };
  const end = payloadAt + 4 + payloadLen;
  if (buf.length < end) return undefined;
  let path: string;
  let headers: Record<string, string> = {};
  try {
    path = utf8.decode(buf.subarray(2, 2 + pathLen));
    if (headersLen > 0) {
      const parsed: unknown = JSON.parse(utf8.decode(buf.subarray(4 + pathLen, payloadAt)));
      if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) return { ok: false, problem: "request frame headers are not a JSON object" };
      headers = parsed as Record<string, string>;
    }
  } catch (err) {
    return { ok: false, problem: `request frame path or headers unreadable: ${(err as Error).message}` };
  }
  return { ok: true, value: { path, headers, payload: buf.subarray(payloadAt + 4, end) }, used: end };
}

export function encodeRequestFrame(f: RequestFrame): Uint8Array {
  const path = new TextEncoder().encode(f.path);
  const headers = new TextEncoder().encode(JSON.stringify(f.headers));
  const out = new Uint8Array(2 + path.length + 2 + headers.length + 4 + f.payload.length);
  const view = new DataView(out.buffer);
  view.setUint16(0, path.length);
  out.set(path, 2);
  view.setUint16(2 + path.length, headers.length);
  out.set(headers, 4 + path.length);
  view.setUint32(4 + path.length + headers.length, f.payload.length);
  out.set(f.payload, 8 + path.length + headers.length);
  return out;
}

/** The ack: empty = accepted; a rejection's text starts `Server unavailable:` or `Server overloaded:`. */
export function encodeAck(text = ""): Uint8Array {
  const body = new TextEncoder().encode(text);
  const out = new Uint8Array(4 + body.length);
  new DataView(out.buffer).setUint32(0, body.length);
  out.set(body, 4);
  return out;
}

/** One two-part message from the start of `buf`; undefined while it is incomplete. */
export function parseTwoPart(buf: Uint8Array, maxBytes = MAX_FRAME_BYTES): Parsed<TwoPart> {
  if (buf.length < 24) return undefined;
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  const headerLen = view.getBigUint64(0);
  const bodyLen = view.getBigUint64(8);
  const total = 24n + headerLen + bodyLen;
  if (total > BigInt(maxBytes)) return { ok: false, problem: `two-part message of ${total} bytes exceeds the ${maxBytes}-byte limit` };
  const end = Number(total);
  if (buf.length < end) return undefined;
  const h = 24 + Number(headerLen);
  return { ok: true, value: { header: buf.subarray(24, h), body: buf.subarray(h, end) }, used: end };
}

export function encodeTwoPart(header: Uint8Array | undefined, body: Uint8Array | undefined): Uint8Array {
  const hl = header?.length ?? 0;
  const bl = body?.length ?? 0;
  const out = new Uint8Array(24 + hl + bl);
  const view = new DataView(out.buffer);
  view.setBigUint64(0, BigInt(hl));
  view.setBigUint64(8, BigInt(bl));
  // The checksum: 0, which Dynamo's release builds send and its decoder skips.
  if (header) out.set(header, 24);
  if (body) out.set(body, 24 + hl);
  return out;
}

const json = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));

/** The response plane's header-only frames: handshake, prologue (null = accepted), sentinel. */
export const callHomeHandshake = (subject: string) => encodeTwoPart(json({ subject, stream_type: "response" }), undefined);
export const prologue = (error: string | null) => encodeTwoPart(json({ error }), undefined);
export const SENTINEL = encodeTwoPart(json("sentinel"), undefined);
/** A data-only frame (empty header). */
export const dataFrame = (body: Uint8Array) => encodeTwoPart(undefined, body);

/** The control message of a request payload's header: where to call home, and the request's id. */
export interface RequestControl {
  id: string;
  payloadCodec: "json" | "msgpack";
  /** `ip:port` of the frontend's response stream server. */
  address: string;
  subject: string;
}

export function parseRequestControl(header: Uint8Array): { ok: true; value: RequestControl } | { ok: false; problem: string } {
  let c: Record<string, unknown>;
  try {
    c = JSON.parse(utf8.decode(header)) as Record<string, unknown>;
  } catch (err) {
    return { ok: false, problem: `request control header is not JSON: ${(err as Error).message}` };
  }
  const codec = c.payload_codec ?? "json";
  if (codec !== "json" && codec !== "msgpack") return { ok: false, problem: `request payload_codec ${JSON.stringify(codec)} is not json or msgpack` };
  if (c.request_type !== undefined && c.request_type !== "single_in") return { ok: false, problem: `request_type ${JSON.stringify(c.request_type)} is not supported (only single_in)` };
  const info = (c.connection_info as Record<string, unknown> | undefined)?.info;
  let parsed: Record<string, unknown>;
  try {
    parsed = JSON.parse(String(info)) as Record<string, unknown>;
  } catch {
    return { ok: false, problem: "request control has no readable connection_info.info" };
  }
  if (typeof c.id !== "string" || typeof parsed.address !== "string" || typeof parsed.subject !== "string") {
    return { ok: false, problem: "request control lacks id, connection_info address or subject" };
  }
  return { ok: true, value: { id: c.id, payloadCodec: codec, address: parsed.address, subject: parsed.subject } };
}
