// The purpose-built writer/reader against msgpackr as an independent oracle, at every size boundary.
import { describe, expect, test } from "bun:test";
import { KvcrError } from "../lib/errors.ts";
import { thrownBy } from "../../test/harness.ts";
import { ENCODE_INVALID, MsgpackReader, MsgpackWriter, pack, unpack, unpackJson } from "./msgpack.ts";

const hex = (b: Uint8Array) => Buffer.from(b).toString("hex");
function written(fn: (w: MsgpackWriter) => void): Uint8Array {
  const w = new MsgpackWriter(4); // tiny on purpose: every write crosses a growth boundary
  fn(w);
  return w.finish();
}

describe("MsgpackWriter", () => {
  test("uints in their smallest form at every boundary", () => {
    const cases: [number, string][] = [
      [0, "00"], [127, "7f"], [128, "cc80"], [255, "ccff"], [256, "cd0100"], [65535, "cdffff"],
      [65536, "ce00010000"], [2 ** 32 - 1, "ceffffffff"], [2 ** 32, "cf0000000100000000"],
      [Number.MAX_SAFE_INTEGER, "cf001fffffffffffff"],
    ];
    for (const [n, want] of cases) expect(hex(written((w) => w.writeUint(n)))).toBe(want);
  });
  test("negative ints in their smallest form", () => {
    const cases: [number, string][] = [
      [-1, "ff"], [-32, "e0"], [-33, "d0df"], [-128, "d080"], [-129, "d1ff7f"], [-32768, "d18000"],
      [-32769, "d2ffff7fff"], [-(2 ** 31), "d280000000"], [-(2 ** 31) - 1, "d3ffffffff7fffffff"],
    ];
    for (const [n, want] of cases) {
      expect(hex(written((w) => w.writeInt(n)))).toBe(want);
      expect(unpack(written((w) => w.writeInt(n)))).toEqual(n < -(2 ** 31) ? BigInt(n) : n);
    }
  });
  test("rejects non-integers and unsafe integers", () => {
    expect(() => written((w) => w.writeUint(1.5))).toThrow(KvcrError);
    expect(thrownBy(KvcrError, () => written((w) => w.writeUint(1.5))).code).toBe(ENCODE_INVALID);
    expect(() => written((w) => w.writeUint(-1))).toThrow("non-negative safe integer");
    expect(() => written((w) => w.writeUint(2 ** 53))).toThrow(KvcrError);
    expect(() => written((w) => w.writeInt(Number.NaN))).toThrow("safe integer");
    expect(() => written((w) => w.writeBigInt(-(2n ** 63n) - 1n))).toThrow("outside int64 range");
  });
  test("strings, bins, arrays and maps across header sizes match msgpackr's reading", () => {
    for (const len of [0, 31, 32, 255, 256, 65535, 65536]) {
      const s = "x".repeat(len);
      expect(unpack(written((w) => w.writeStr(s)))).toBe(s);
      const bin = new Uint8Array(len).fill(7);
      expect(new Uint8Array(unpack(written((w) => w.writeBin(bin))) as Uint8Array)).toEqual(bin);
    }
    for (const n of [0, 15, 16, 65535, 65536]) {
      expect(unpack(written((w) => { w.writeArrayHeader(n); for (let i = 0; i < n; i++) w.writeNil(); }))).toEqual(new Array(n).fill(null));
    }
    const map = written((w) => { w.writeMapHeader(16); for (let i = 0; i < 16; i++) { w.writeStr(`k${i}`); w.writeBool(i % 2 === 0); } });
    expect(hex(map).slice(0, 6)).toBe("de0010");
    expect(Object.keys(unpack(map) as object)).toHaveLength(16);
  });
  test("multi-byte UTF-8 strings get the UTF-8 byte length in the header", () => {
    const s = "é".repeat(20); // 20 chars, 40 bytes: str8, not fixstr
    expect(hex(written((w) => w.writeStr(s))).slice(0, 4)).toBe("d928");
    expect(unpack(written((w) => w.writeStr(s)))).toBe(s);
  });
  test("reset reuses the buffer and finish returns an independent copy", () => {
    const w = new MsgpackWriter(8);
    w.writeStr("first");
    const first = w.finish();
    w.reset();
    w.writeStr("other");
    expect(unpack(first)).toBe("first");
    expect(w.length).toBe(6);
  });
});

describe("MsgpackReader reads msgpackr's encodings", () => {
  test("ints, floats, strings and generic values", () => {
    for (const n of [0, 1, 127, 128, 65535, 65536, 2 ** 32 - 1, -1, -33, -129, -32769, -(2 ** 31)]) {
      expect(new MsgpackReader(pack(n)).int("n")).toBe(n);
    }
    expect(new MsgpackReader(pack(1.25)).number("x")).toBe(1.25);
    expect(new MsgpackReader(pack("é".repeat(300))).str("s")).toBe("é".repeat(300));
    const value = ["a", 1, -2, true, null, 5n, Uint8Array.from([1, 2]), [[]]];
    expect(new MsgpackReader(pack(value)).value("v")).toEqual(value);
  });
  test("skip steps over any well-formed value, maps and ext included", () => {
    const bytes = pack([{ a: [1, { b: "c" }], d: new Date(0) }, "after"]);
    const r = new MsgpackReader(bytes);
    expect(r.arrayHeader("outer")).toBe(2);
    r.skip("first");
    expect(r.str("second")).toBe("after");
    expect(r.atEnd()).toBe(true);
  });
});

describe("unpackJson (msgpackr, off the wire path)", () => {
  test("64-bit ints exact as decimal strings on both sides of 2^53 and 2^63, bytes as hex, maps as objects", () => {
    const bytes = pack({ small: 5, big: 2n ** 60n + 1n, huge: 2n ** 64n - 1n, neg: -(2n ** 63n), bin: Uint8Array.from([0, 171]), list: [true, null, 1.5, "x"] });
    expect(unpackJson(bytes)).toEqual({ small: 5, big: "1152921504606846977", huge: "18446744073709551615", neg: "-9223372036854775808", bin: "00ab", list: [true, null, 1.5, "x"] });
    // Our wire writer's uint64 `cf` below 2^53 reads back as an exact decimal string too.
    expect(unpackJson(written((w) => w.writeU64(2n ** 40n)))).toBe("1099511627776");
  });
  test("refuses what is not one whole plain msgpack value", () => {
    for (const hex of ["c1", "81a3666f6fc1", "d40501", "0102", "92c0", "ddffffffff"]) {
      expect(() => unpackJson(Uint8Array.from(Buffer.from(hex, "hex")))).toThrow();
    }
  });
});
