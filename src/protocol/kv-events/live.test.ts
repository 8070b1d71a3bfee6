import { describe, expect, test } from "bun:test";
import { encodeSeq } from "../seq-frame.ts";
import { liveSeqNumber, parseLiveMessage } from "./live.ts";

const te = new TextEncoder();

describe("live message [topic, seq, payload]", () => {
  test("parses topic, seq and payload", () => {
    const payload = new Uint8Array([1, 2]);
    expect(parseLiveMessage([te.encode("t"), encodeSeq(7n), payload])).toEqual({ ok: true, topic: te.encode("t"), seq: 7n, payload });
    expect(liveSeqNumber([te.encode("t"), encodeSeq(2n ** 53n - 1n), payload])).toBe(2 ** 53 - 1);
  });

  test("a wrong frame count or seq width is a problem naming it, the same for both readers", () => {
    const two = [te.encode("t"), encodeSeq(1n)];
    expect(parseLiveMessage(two)).toEqual({ ok: false, problem: "live message: expected [topic, seq (8 bytes), payload], got 2 frame(s)" });
    expect(liveSeqNumber(two)).toBe("live message: expected [topic, seq (8 bytes), payload], got 2 frame(s)");
    const short = [te.encode("t"), new Uint8Array(3), new Uint8Array(0)];
    expect(parseLiveMessage(short)).toEqual({ ok: false, problem: "live message: seq frame has 3 bytes, expected 8" });
    expect(liveSeqNumber(short)).toBe("live message: seq frame has 3 bytes, expected 8");
  });

  test("the agent's number path refuses a seq it cannot hold exactly, and the replay end marker's", () => {
    expect(liveSeqNumber([te.encode("t"), encodeSeq(2n ** 53n), new Uint8Array(0)])).toMatch(/out of range/);
    expect(liveSeqNumber([te.encode("t"), encodeSeq(2n ** 64n - 1n), new Uint8Array(0)])).toMatch(/out of range/);
  });
});
