// Socket options with libzmq's defaults, and the frame type accepted by send().
import { createLogger, type Logger } from "../../lib/logger.ts";
import { DEFAULT_MAX_MESSAGE_BYTES } from "../../protocol/zmtp/parser.ts";

export interface ZmtpSocketOptions {
  /** Where disconnect reasons go; default: one shared "zmtp" logger at warn. */
  logger?: Logger;
  /** Messages queued per peer before new ones are dropped for that peer (libzmq ZMQ_SNDHWM); 0 = no limit. */
  sendHighWaterMark?: number;
  /** Messages queued per peer for receive() before that peer is paused (libzmq ZMQ_RCVHWM); 0 = no limit. */
  receiveHighWaterMark?: number;
  /** Largest accepted message (all frames) or command; bigger → peer disconnected (ZMQ_MAXMSGSIZE). */
  maxMessageBytes?: number;
  /** First reconnect delay of a connect()ed endpoint; doubles per failed attempt (ZMQ_RECONNECT_IVL). */
  reconnectIntervalMs?: number;
  /** Cap of the reconnect delay (ZMQ_RECONNECT_IVL_MAX). */
  reconnectIntervalMaxMs?: number;
  /** A peer that has not finished the handshake by then is dropped (ZMQ_HANDSHAKE_IVL). */
  handshakeTimeoutMs?: number;
  /** Routing identity announced in READY (ROUTER/DEALER; ZMQ_ROUTING_ID), at most 255 bytes. */
  identity?: Uint8Array | string;
}

export type ResolvedOptions = Required<Omit<ZmtpSocketOptions, "identity" | "logger">>;

export const DEFAULT_OPTIONS: ResolvedOptions = {
  sendHighWaterMark: 1000,
  receiveHighWaterMark: 1000,
  maxMessageBytes: DEFAULT_MAX_MESSAGE_BYTES,
  reconnectIntervalMs: 100,
  reconnectIntervalMaxMs: 5000,
  handshakeTimeoutMs: 30_000,
};

/** A high-water-mark option as a queue limit: 0 means no limit, as in libzmq. */
export function hwmLimit(hwm: number): number {
  return hwm === 0 ? Number.POSITIVE_INFINITY : hwm;
}

/** A frame: bytes, or a string sent as UTF-8. */
export type Frame = Uint8Array | string;

const encoder = new TextEncoder();

export function toBytes(frame: Frame): Uint8Array {
  return typeof frame === "string" ? encoder.encode(frame) : frame;
}

/** Frames as bytes; the input array itself when it holds no strings (the hot path). */
export function toFrameBytes(frames: readonly Frame[]): readonly Uint8Array[] {
  for (let i = 0; i < frames.length; i++) {
    if (typeof frames[i] === "string") return frames.map(toBytes);
  }
  return frames as readonly Uint8Array[];
}

let sharedLogger: Logger | undefined;
export function defaultLogger(): Logger {
  sharedLogger ??= createLogger({ tag: "zmtp", level: "warn" });
  return sharedLogger;
}
