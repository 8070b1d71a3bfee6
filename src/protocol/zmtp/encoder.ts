// ZMTP 3.1 encoder: greeting, handshake/subscription commands and message frames. Messages are
// written straight into a caller's buffer (`writeMessage`) so the transport can coalesce many
// messages into one socket write without intermediate copies.
import { concatBytes } from "../../lib/bytes.ts";
import { AS_SERVER_OFFSET, CommandName, FrameFlag, MECHANISM_OFFSET, NULL_MECHANISM, GREETING_BYTES, sendsIdentity, type SocketType } from "./constants.ts";

const textEncoder = new TextEncoder();

/**
 * 64-byte greeting: signature FF 00*7 01 7F (the 01 padding mirrors libzmq, which keeps ZMTP 1.0
 * peers able to parse it), version 3.1, mechanism NULL, as-server 0, zero filler.
 */
export function encodeGreeting(opts: { mechanism?: string; asServer?: boolean; minor?: number } = {}): Uint8Array {
  const out = new Uint8Array(GREETING_BYTES);
  out[0] = 0xff;
  out[8] = 0x01;
  out[9] = 0x7f;
  out[10] = 3;
  out[11] = opts.minor ?? 1;
  out.set(textEncoder.encode(opts.mechanism ?? NULL_MECHANISM).subarray(0, 20), MECHANISM_OFFSET);
  out[AS_SERVER_OFFSET] = opts.asServer ? 1 : 0;
  return out;
}

/** Header bytes for a frame body of `size` bytes: 2 (short) or 9 (long). */
export function frameHeaderBytes(size: number): number {
  return size <= 255 ? 2 : 9;
}

/** Writes a frame header at `offset`; returns the offset after it. */
export function writeFrameHeader(out: Uint8Array, offset: number, flags: number, size: number): number {
  if (size <= 255) {
    out[offset] = flags;
    out[offset + 1] = size;
    return offset + 2;
  }
  out[offset] = flags | FrameFlag.Long;
  // Sizes fit in 53 bits; split into two u32 halves for the big-endian u64.
  const high = Math.floor(size / 0x1_0000_0000);
  const low = size >>> 0;
  out[offset + 1] = high >>> 24;
  out[offset + 2] = (high >>> 16) & 0xff;
  out[offset + 3] = (high >>> 8) & 0xff;
  out[offset + 4] = high & 0xff;
  out[offset + 5] = low >>> 24;
  out[offset + 6] = (low >>> 16) & 0xff;
  out[offset + 7] = (low >>> 8) & 0xff;
  out[offset + 8] = low & 0xff;
  return offset + 9;
}

/** Wire size of frames[start..] as one multipart message. */
export function messageWireBytes(frames: readonly Uint8Array[], start = 0): number {
  let total = 0;
  for (let i = start; i < frames.length; i++) {
    const size = frames[i]!.length;
    total += (size <= 255 ? 2 : 9) + size;
  }
  return total;
}

/**
 * Writes frames[start..] as one message (MORE on all but the last frame) at `offset`; the caller
 * guarantees room (messageWireBytes). Returns the offset after the message.
 */
export function writeMessage(frames: readonly Uint8Array[], out: Uint8Array, offset: number, start = 0): number {
  const last = frames.length - 1;
  for (let i = start; i <= last; i++) {
    const frame = frames[i]!;
    offset = writeFrameHeader(out, offset, i < last ? FrameFlag.More : 0, frame.length);
    out.set(frame, offset);
    offset += frame.length;
  }
  return offset;
}

export function encodeMessage(frames: readonly Uint8Array[]): Uint8Array {
  if (frames.length === 0) throw new RangeError("a ZMTP message needs at least one frame");
  const out = new Uint8Array(messageWireBytes(frames));
  writeMessage(frames, out, 0);
  return out;
}

/** A command frame: name length, name, data. */
export function encodeCommand(name: string, data: Uint8Array = new Uint8Array(0)): Uint8Array {
  const nameBytes = textEncoder.encode(name);
  const bodySize = 1 + nameBytes.length + data.length;
  const out = new Uint8Array(frameHeaderBytes(bodySize) + bodySize);
  let o = writeFrameHeader(out, 0, FrameFlag.Command, bodySize);
  out[o++] = nameBytes.length;
  out.set(nameBytes, o);
  out.set(data, o + nameBytes.length);
  return out;
}

/** READY with Socket-Type, plus Identity for ROUTER/DEALER (empty when unset), as libzmq sends. */
export function encodeReady(socketType: SocketType, identity?: Uint8Array): Uint8Array {
  const props: [string, Uint8Array][] = [["Socket-Type", textEncoder.encode(socketType)]];
  if (sendsIdentity(socketType)) props.push(["Identity", identity ?? new Uint8Array(0)]);
  return encodeCommand(CommandName.Ready, encodeProperties(props));
}

export function encodeProperties(props: readonly (readonly [string, Uint8Array])[]): Uint8Array {
  const parts: Uint8Array[] = [];
  for (const [name, value] of props) {
    const nameBytes = textEncoder.encode(name);
    const head = new Uint8Array(1 + nameBytes.length + 4);
    head[0] = nameBytes.length;
    head.set(nameBytes, 1);
    new DataView(head.buffer).setUint32(1 + nameBytes.length, value.length);
    parts.push(head, value);
  }
  return concat(parts);
}

/** ERROR: reason as a 1-byte-length string (truncated to 255 bytes). */
export function encodeError(reason: string): Uint8Array {
  const bytes = textEncoder.encode(reason).subarray(0, 255);
  const data = new Uint8Array(1 + bytes.length);
  data[0] = bytes.length;
  data.set(bytes, 1);
  return encodeCommand(CommandName.Error, data);
}

export function encodeSubscribe(topic: Uint8Array): Uint8Array {
  return encodeCommand(CommandName.Subscribe, topic);
}

export function encodeCancel(topic: Uint8Array): Uint8Array {
  return encodeCommand(CommandName.Cancel, topic);
}

/** ZMTP 3.0 subscription: a one-frame message, first byte 1 (subscribe) or 0 (cancel), then the topic. */
export function encodeSubscriptionMessage(topic: Uint8Array, subscribe: boolean): Uint8Array {
  const body = new Uint8Array(1 + topic.length);
  body[0] = subscribe ? 1 : 0;
  body.set(topic, 1);
  return encodeMessage([body]);
}

/**
 * The subscription as the peer understands it: SUBSCRIBE/CANCEL commands for ZMTP 3.1 peers,
 * the message form for 3.0 peers (older libzmq, JeroMQ), which do not know the commands.
 */
export function encodeSubscriptionFor(peerMinor: number, topic: Uint8Array, subscribe: boolean): Uint8Array {
  if (peerMinor >= 1) return subscribe ? encodeSubscribe(topic) : encodeCancel(topic);
  return encodeSubscriptionMessage(topic, subscribe);
}

/** PING: TTL in deciseconds (u16) and up to 16 bytes of context. */
export function encodePing(ttlDs: number, context: Uint8Array = new Uint8Array(0)): Uint8Array {
  const data = new Uint8Array(2 + context.length);
  data[0] = (ttlDs >>> 8) & 0xff;
  data[1] = ttlDs & 0xff;
  data.set(context, 2);
  return encodeCommand(CommandName.Ping, data);
}

export function encodePong(context: Uint8Array): Uint8Array {
  return encodeCommand(CommandName.Pong, context);
}

/** The frames' bytes back to back (a greeting and READY in one write; tests build streams with it). */
export function concat(parts: readonly Uint8Array[]): Uint8Array {
  return concatBytes(parts);
}
