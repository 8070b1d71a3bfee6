// The u64 big-endian sequence/cursor frame shared by the raw KV-event stream (SPEC §4.2: seq,
// replay start, end marker) and the router event stream (§6.1: outbound cursor).
import { ProtocolError } from "../lib/errors.ts";

const MAX_U64 = 0xffff_ffff_ffff_ffffn;

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

