// The replay exchange of a raw KV-event publisher, both sides: the request [identity, "", start
// seq], each reply in either layout — [identity, "", topic, seq, payload] (vLLM >= 0.26, our mocker)
// or [identity, "", seq, payload] (older vLLM) — and the end marker (seq 0xFF×8, empty payload).
import { startsWithBytes } from "../../lib/bytes.ts";
import { decodeSeq, encodeSeq, REPLAY_END_SEQ } from "../seq-frame.ts";

const EMPTY = new Uint8Array(0);
const END_SEQ_FRAME = encodeSeq(REPLAY_END_SEQ);

/** What a DEALER sends to ask for every buffered batch from `start` on. */
export function replayRequest(start: bigint): Uint8Array[] {
  return [EMPTY, encodeSeq(start)];
}

/** A request as the ROUTER receives it (identity first): its start seq, or why it is not one. */
export function parseReplayRequest(frames: readonly Uint8Array[]): { start: bigint } | { problem: string } {
  if (frames.length !== 3) return { problem: `${frames.length - 1} frames after the identity, expected 2` };
  if (frames[1]!.length !== 0) return { problem: `delimiter frame has ${frames[1]!.length} bytes, expected empty` };
  if (frames[2]!.length !== 8) return { problem: `start_seq frame has ${frames[2]!.length} bytes, expected 8` };
  return { start: decodeSeq(frames[2]!) };
}

/** The ROUTER's reply for one buffered batch (the topic-carrying layout). */
export function replayBatchFrames(identity: Uint8Array, topic: Uint8Array, seq: bigint, payload: Uint8Array): Uint8Array[] {
  return [identity, EMPTY, topic, encodeSeq(seq), payload];
}

/** The ROUTER's end marker after the last batch. */
export function replayEndFrames(identity: Uint8Array): Uint8Array[] {
  return [identity, EMPTY, EMPTY, END_SEQ_FRAME, EMPTY];
}

export type ReplayReply =
  /** A replayed batch; `topic` is the subscribed one for the layout without a topic frame. */
  | { kind: "batch"; topic: Uint8Array; seq: bigint; payload: Uint8Array }
  /** A batch under a topic the subscription does not match: skipped, as the live SUB skips it. */
  | { kind: "other-topic" }
  | { kind: "end" }
  | { kind: "bad"; problem: string };

const EXPECTED = 'replay reply: expected ["", topic, seq, payload] or vLLM\'s ["", seq, payload]';

/**
 * One reply as the DEALER receives it: `["", topic, seq, payload]` or `["", seq, payload]`, told
 * apart by frame count (either may come in one replay). The older layout has one topic for all
 * its batches, so its batches carry `subscribed` and are not filtered by it.
 */
export function parseReplayReply(frames: readonly Uint8Array[], subscribed: Uint8Array): ReplayReply {
  const n = frames.length;
  if (n !== 3 && n !== 4) return { kind: "bad", problem: `${EXPECTED}, got ${n} frames` };
  if (frames[0]!.length !== 0) return { kind: "bad", problem: `${EXPECTED}, got ${n} frames whose first is not the empty delimiter` };
  const payload = frames[n - 1]!;
  let seq: bigint;
  try {
    seq = decodeSeq(frames[n - 2]!);
  } catch (err) {
    return { kind: "bad", problem: `replay reply: ${(err as Error).message}` };
  }
  if (seq === REPLAY_END_SEQ) {
    return payload.length === 0 ? { kind: "end" } : { kind: "bad", problem: `replay reply: the end marker's seq with a ${payload.length}-byte payload` };
  }
  if (n === 3) return { kind: "batch", topic: subscribed, seq, payload };
  const topic = frames[1]!;
  return startsWithBytes(topic, subscribed) ? { kind: "batch", topic, seq, payload } : { kind: "other-topic" };
}
