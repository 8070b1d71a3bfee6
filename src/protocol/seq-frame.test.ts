// u64 big-endian seq frames and the replay end marker.
import { describe, expect, test } from "bun:test";
import { ProtocolError } from "../lib/errors.ts";
import { decodeSeq, decodeSeqNumber, encodeSeq, REPLAY_END_SEQ, SeqFrame } from "./seq-frame.ts";

describe("u64 big-endian seq frames", () => {
  test("encodes big-endian, 8 bytes", () => {
    expect([...encodeSeq(0n)]).toEqual([0, 0, 0, 0, 0, 0, 0, 0]);
    expect([...encodeSeq(0x0102030405060708n)]).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
  });
  test("the replay end marker is eight 0xff bytes (vLLM's -1 as i64)", () => {
    expect([...encodeSeq(REPLAY_END_SEQ)]).toEqual(new Array(8).fill(0xff));
    expect(decodeSeq(Uint8Array.from(new Array(8).fill(0xff)))).toBe(REPLAY_END_SEQ);
  });
  test("round trip, also from a view into a larger buffer", () => {
    for (const n of [0n, 1n, 255n, 256n, 2n ** 53n + 1n, 2n ** 64n - 2n]) expect(decodeSeq(encodeSeq(n))).toBe(n);
    const big = new Uint8Array(20);
    big.set(encodeSeq(77n), 5);
    expect(decodeSeq(big.subarray(5, 13))).toBe(77n);
  });
  test("a frame of any other length is a ProtocolError", () => {
    expect(() => decodeSeq(new Uint8Array(7))).toThrow(ProtocolError);
    expect(() => decodeSeq(new Uint8Array(7))).toThrow("seq frame: expected exactly 8 bytes, got 7 at byte 7");
    expect(() => decodeSeq(new Uint8Array(9))).toThrow("seq frame: expected exactly 8 bytes, got 9 at byte 8");
    expect(() => decodeSeq(new Uint8Array(0))).toThrow("got 0");
  });
  test("values outside u64 cannot be encoded", () => {
    expect(() => encodeSeq(-1n)).toThrow("outside u64 range");
    expect(() => encodeSeq(2n ** 64n)).toThrow("outside u64 range");
  });
  test("as a number: exact below 2^53, Infinity for the end marker, undefined for anything else", () => {
    for (const n of [0, 1, 0xffff_ffff, 0x1_0000_0000, Number.MAX_SAFE_INTEGER]) expect(decodeSeqNumber(encodeSeq(BigInt(n)))).toBe(n);
    expect(decodeSeqNumber(encodeSeq(REPLAY_END_SEQ))).toBe(Number.POSITIVE_INFINITY);
    expect(decodeSeqNumber(encodeSeq(2n ** 53n))).toBeUndefined();
    expect(decodeSeqNumber(encodeSeq(REPLAY_END_SEQ - 255n))).toBeUndefined(); // all ones but the last byte: no end marker
    expect(decodeSeqNumber(new Uint8Array(7))).toBeUndefined();
    expect(decodeSeqNumber(undefined)).toBeUndefined();
  });
  test("a reused frame rewritten per batch encodes as encodeSeq does", () => {
    const f = new SeqFrame();
    for (const n of [0, 7, 0xffff_ffff, 0x1_0000_0001, Number.MAX_SAFE_INTEGER]) {
      f.set(n);
      expect([...f.bytes]).toEqual([...encodeSeq(BigInt(n))]);
    }
  });
});
