import { describe, expect, test } from "bun:test";
import { encodeSeq, REPLAY_END_SEQ } from "../seq-frame.ts";
import { parseReplayReply, parseReplayRequest, replayBatchFrames, replayEndFrames, replayRequest } from "./replay.ts";

const te = new TextEncoder();
const EMPTY = new Uint8Array(0);
const ID = Uint8Array.of(0, 1, 2, 3, 4);
const payload = Uint8Array.of(0x93, 1, 0x90, 0);

describe("the replay exchange", () => {
  test("a request as the ROUTER receives it (identity first) gives its start seq", () => {
    expect(parseReplayRequest([ID, ...replayRequest(42n)])).toEqual({ start: 42n });
  });

  test("any other request names its problem", () => {
    expect(parseReplayRequest([ID, EMPTY])).toEqual({ problem: "1 frames after the identity, expected 2" });
    expect(parseReplayRequest([ID, Uint8Array.of(1), encodeSeq(0n)])).toEqual({ problem: "delimiter frame has 1 bytes, expected empty" });
    expect(parseReplayRequest([ID, EMPTY, new Uint8Array(4)])).toEqual({ problem: "start_seq frame has 4 bytes, expected 8" });
  });

  test("the ROUTER's batch and end marker, as a DEALER receives them (identity stripped)", () => {
    const topic = te.encode("kv@0");
    expect(parseReplayReply(replayBatchFrames(ID, topic, 7n, payload).slice(1), te.encode("kv"))).toEqual({ kind: "batch", topic, seq: 7n, payload });
    expect(parseReplayReply(replayEndFrames(ID).slice(1), te.encode("kv"))).toEqual({ kind: "end" });
  });

  test("the layout without a topic frame carries the subscribed topic and is not filtered", () => {
    const subscribed = te.encode("kv");
    expect(parseReplayReply([EMPTY, encodeSeq(3n), payload], subscribed)).toEqual({ kind: "batch", topic: subscribed, seq: 3n, payload });
    expect(parseReplayReply([EMPTY, encodeSeq(REPLAY_END_SEQ), EMPTY], subscribed)).toEqual({ kind: "end" });
  });

  test("a batch under another topic is skipped", () => {
    expect(parseReplayReply([EMPTY, te.encode("other"), encodeSeq(0n), payload], te.encode("kv"))).toEqual({ kind: "other-topic" });
  });

  test("the end marker's seq with a payload is malformed", () => {
    expect(parseReplayReply([EMPTY, encodeSeq(REPLAY_END_SEQ), payload], EMPTY)).toEqual({ kind: "bad", problem: "replay reply: the end marker's seq with a 4-byte payload" });
  });
});
