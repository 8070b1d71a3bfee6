import { describe, expect, test } from "bun:test";
import { decodeCommand, decodeSubscriptionMessage } from "./commands.ts";
import { encodeCancel, encodeError, encodeGreeting, encodeMessage, encodeReady, encodeSubscribe, encodeSubscriptionFor, encodeSubscriptionMessage } from "./encoder.ts";

const hex = (b: Uint8Array) => Buffer.from(b).toString("hex");
const te = new TextEncoder();

describe("ZMTP encoder: golden bytes (RFC 37 / what libzmq 4.3 puts on the wire)", () => {
  test("greeting: signature, version 3.1, NULL, filler", () => {
    expect(hex(encodeGreeting())).toBe("ff00000000000000017f0301" + hex(te.encode("NULL")) + "00".repeat(16) + "00" + "00".repeat(31));
  });

  test("READY for SUB and DEALER", () => {
    // flags 04, size 0x19, "\x05READY", "\x0bSocket-Type", u32 3, "SUB"
    expect(hex(encodeReady("SUB"))).toBe("04190552454144590b536f636b65742d5479706500000003535542");
    const dealer = encodeReady("DEALER", te.encode("id1"));
    expect(hex(dealer)).toBe("04" + "2c" + "055245414459" + "0b536f636b65742d54797065" + "00000006" + hex(te.encode("DEALER")) + "084964656e74697479" + "00000003" + hex(te.encode("id1")));
  });

  test("short and long frames, MORE on all but the last", () => {
    expect(hex(encodeMessage([te.encode("ab"), new Uint8Array(0)]))).toBe("0102616200" + "00");
    const long = encodeMessage([new Uint8Array(256)]);
    expect(hex(long.subarray(0, 9))).toBe("020000000000000100");
    expect(long.length).toBe(265);
    const huge = encodeMessage([new Uint8Array(70000), te.encode("z")]);
    expect(hex(huge.subarray(0, 9))).toBe("030000000000011170");
    expect(() => encodeMessage([])).toThrow(/at least one frame/);
  });

  test("SUBSCRIBE/CANCEL commands and the ZMTP 3.0 message form", () => {
    expect(hex(encodeSubscribe(te.encode("kv")))).toBe("040c09535542534352494245" + "6b76");
    expect(hex(encodeCancel(te.encode("kv")))).toBe("0409" + "06" + hex(te.encode("CANCEL")) + "6b76");
    expect(hex(encodeSubscriptionMessage(te.encode("kv"), true))).toBe("0003016b76");
    expect(hex(encodeSubscriptionMessage(te.encode(""), false))).toBe("000100");
    expect(encodeSubscriptionFor(1, te.encode("a"), true)).toEqual(encodeSubscribe(te.encode("a")));
    expect(encodeSubscriptionFor(0, te.encode("a"), false)).toEqual(encodeSubscriptionMessage(te.encode("a"), false));
  });

  test("commands decode back to what was encoded", () => {
    const ready = decodeCommand(encodeReady("ROUTER", te.encode("r")).subarray(2));
    expect(ready).toMatchObject({ kind: "ready", socketType: "ROUTER", identity: te.encode("r") });
    expect(decodeCommand(encodeError("bad socket type").subarray(2))).toEqual({ kind: "error", reason: "bad socket type" });
  });

  test("message-form subscriptions and cancels decode", () => {
    expect(decodeSubscriptionMessage([new Uint8Array([1, 0x61])])).toEqual({ subscribe: true, topic: new Uint8Array([0x61]) });
    expect(decodeSubscriptionMessage([new Uint8Array([0])])).toEqual({ subscribe: false, topic: new Uint8Array(0) });
  });

  test("other messages are not subscriptions", () => {
    expect(decodeSubscriptionMessage([new Uint8Array([2, 0x61])])).toBeUndefined();
    expect(decodeSubscriptionMessage([new Uint8Array([1]), new Uint8Array(0)])).toBeUndefined();
    expect(decodeSubscriptionMessage([new Uint8Array(0)])).toBeUndefined();
  });
});
