// The u64 big-endian sequence/cursor frame of the raw KV-event stream (seq, replay start, end
// marker) and of the router event stream (outbound cursor): every encode and decode of it.
import { ProtocolError } from "../lib/errors.ts";

const MAX_U64 = 0xffff_ffff_ffff_ffffn;
const TWO_32 = 0x1_0000_0000;

/** Seq of the replay end marker frame `[identity, "", "", END, ""]` (vLLM sends -1 as i64 BE). */
export const REPLAY_END_SEQ = MAX_U64;

export function encodeSeq(seq: bigint): Uint8Array {
  if (seq < 0n || seq > MAX_U64) throw new RangeError(`seq ${seq} is outside u64 range`);
  const frame = new Uint8Array(8);
  new DataView(frame.buffer).setBigUint64(0, seq);
  return frame;
}

/** Exactly 8 bytes, big-endian; any other length is a ProtocolError. */
export function decodeSeq(frame: Uint8Array): bigint {
  if (frame.length !== 8) {
    throw new ProtocolError(`seq frame: expected exactly 8 bytes, got ${frame.length}`, Math.min(frame.length, 8), frame);
  }
  return new DataView(frame.buffer, frame.byteOffset, 8).getBigUint64(0);
}

/**
 * The seq of a frame as a number, with no bigint (the hot path): exact below 2^53, Infinity for
 * the end marker; undefined for a missing frame, one not 8 bytes long, or a seq from 2^53 up.
 */
export function decodeSeqNumber(frame: Uint8Array | undefined): number | undefined {
  if (!frame || frame.length !== 8) return undefined;
  const view = new DataView(frame.buffer, frame.byteOffset, 8);
  const hi = view.getUint32(0);
  if (hi >= 0x20_0000) return hi === 0xffff_ffff && view.getUint32(4) === 0xffff_ffff ? Number.POSITIVE_INFINITY : undefined;
  return hi * TWO_32 + view.getUint32(4);
}

/** One 8-byte frame a sender rewrites for each batch it numbers: no allocation per batch. */
export class SeqFrame {
  readonly bytes = new Uint8Array(8);
  private readonly view = new DataView(this.bytes.buffer);

  /** `seq`: a whole number from 0 to 2^53 − 1. */
  set(seq: number): void {
    this.view.setUint32(0, Math.floor(seq / TWO_32));
    this.view.setUint32(4, seq >>> 0);
  }
}
