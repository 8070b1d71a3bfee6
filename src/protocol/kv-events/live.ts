// The live message of a raw KV-event publisher, as vLLM's ZMQ publisher sends it: [topic, seq
// (u64 big-endian), payload]. Both readers (the agent's slot, the `events` tap) parse it here.
import { decodeSeq, decodeSeqNumber } from "../seq-frame.ts";

export type LiveMessage = { ok: true; topic: Uint8Array; seq: bigint; payload: Uint8Array } | { ok: false; problem: string };

/** Why frames are not a live message, or undefined when they are. */
function shapeProblem(frames: readonly Uint8Array[]): string | undefined {
  if (frames.length !== 3) return `live message: expected [topic, seq (8 bytes), payload], got ${frames.length} frame(s)`;
  if (frames[1]!.length !== 8) return `live message: seq frame has ${frames[1]!.length} bytes, expected 8`;
  return undefined;
}

/** A live message with its seq as a bigint. */
export function parseLiveMessage(frames: readonly Uint8Array[]): LiveMessage {
  const problem = shapeProblem(frames);
  if (problem !== undefined) return { ok: false, problem };
  return { ok: true, topic: frames[0]!, seq: decodeSeq(frames[1]!), payload: frames[2]! };
}

/**
 * A live message's seq as a number (the hot path: no bigint), or the problem: also a seq from
 * 2^53 up, or the replay end marker's, which no live batch carries.
 */
export function liveSeqNumber(frames: readonly Uint8Array[]): number | string {
  const problem = shapeProblem(frames);
  if (problem !== undefined) return problem;
  const seq = decodeSeqNumber(frames[1]);
  if (seq === undefined || seq === Number.POSITIVE_INFINITY) return "live message: seq out of range (2^53 or above)";
  return seq;
}
