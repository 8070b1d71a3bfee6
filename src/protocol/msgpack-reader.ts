// Purpose-built msgpack cursor for the wire decoders: reads exactly the shapes a codec asks for and
// turns every surprise (wrong type, truncation, absurd length, deep nesting) into a ProtocolError
// with the byte offset, so decoders never throw anything else and never allocate from a bad header.
import { ProtocolError } from "../lib/errors.ts";
import type { KeyTable } from "./msgpack-key-table.ts";

/** Nesting budget for values we skip or read generically; deeper input is refused, not recursed. */
export const MAX_DEPTH = 32;

/** A generic msgpack value as the codecs expose it (maps and ext types are not supported). */
export type MsgpackScalar = null | boolean | number | bigint | string | Uint8Array;
export type MsgpackValue = MsgpackScalar | readonly MsgpackValue[];

const utf8 = new TextDecoder("utf-8", { fatal: true });
const FIXEXT_LENGTH: Record<number, number> = { 0xd4: 1, 0xd5: 2, 0xd6: 4, 0xd7: 8, 0xd8: 16 };

/** Short human name of the value starting with byte `b`, for error messages. */
export function typeName(b: number): string {
  if (b < 0x80 || b >= 0xe0 || (b >= 0xcc && b <= 0xd3)) return "int";
  if (b < 0x90 || b === 0xde || b === 0xdf) return "map";
  if (b < 0xa0 || b === 0xdc || b === 0xdd) return "array";
  if (b < 0xc0 || (b >= 0xd9 && b <= 0xdb)) return "string";
  if (b === 0xc0) return "nil";
  if (b === 0xc2 || b === 0xc3) return "bool";
  if (b >= 0xc4 && b <= 0xc6) return "bytes";
  if (b === 0xca || b === 0xcb) return "float";
  if (b === 0xc1) return "reserved byte 0xc1";
  return "ext";
}

export class MsgpackReader {
  readonly view: DataView;
  pos = 0;
  readonly end: number;

  constructor(readonly bytes: Uint8Array) {
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    this.end = bytes.length;
  }

  fail(message: string, at: number = this.pos): never {
    throw new ProtocolError(message, at, this.bytes);
  }

  /** Fails unless `n` more bytes exist after `pos`; `at` is the start of the value being read. */
  need(n: number, what: string, at: number): void {
    if (this.pos + n > this.end) {
      this.fail(`truncated ${what}: needs ${n} more bytes, ${this.end - this.pos} left`, at);
    }
  }

  atEnd(): boolean {
    return this.pos >= this.end;
  }

  /** The next type byte, not consumed. */
  peek(what: string): number {
    if (this.pos >= this.end) this.fail(`truncated: expected ${what}, input ended`);
    return this.bytes[this.pos]!;
  }

  /** Consumes a nil and returns true, or returns false leaving the cursor in place. */
  nil(what: string): boolean {
    if (this.peek(what) !== 0xc0) return false;
    this.pos++;
    return true;
  }

  /** Reads a big-endian length of `width` bytes (1, 2 or 4) following a type byte at `at`. */
  private length(width: number, what: string, at: number): number {
    if (this.pos + width > this.end) this.fail(`truncated ${what} header`, at);
    const p = this.pos;
    this.pos += width;
    return width === 1 ? this.bytes[p]! : width === 2 ? this.view.getUint16(p) : this.view.getUint32(p);
  }

  /** Array length, or -1 (nothing consumed) when the next value is not an array. */
  tryArrayHeader(what: string): number {
    const at = this.pos;
    const b = this.peek(what);
    let n: number;
    if (b >= 0x90 && b <= 0x9f) n = b & 0x0f;
    else if (b === 0xdc || b === 0xdd) n = -1;
    else return -1;
    this.pos++;
    if (n < 0) n = this.length(b === 0xdc ? 2 : 4, what, at);
    // Each element takes at least one byte: refuse lengths the buffer cannot hold before
    // anyone allocates or loops on them.
    if (n > this.end - this.pos) this.fail(`truncated ${what}: ${n} elements declared, ${this.end - this.pos} bytes left`, at);
    return n;
  }

  arrayHeader(what: string): number {
    const n = this.tryArrayHeader(what);
    if (n < 0) this.fail(`${what}: expected array, got ${typeName(this.bytes[this.pos]!)}`);
    return n;
  }

  /** Map entry count, or -1 (nothing consumed) when the next value is not a map. */
  tryMapHeader(what: string): number {
    const at = this.pos;
    const b = this.peek(what);
    let n: number;
    if (b >= 0x80 && b <= 0x8f) n = b & 0x0f;
    else if (b === 0xde || b === 0xdf) n = -1;
    else return -1;
    this.pos++;
    if (n < 0) n = this.length(b === 0xde ? 2 : 4, what, at);
    if (n * 2 > this.end - this.pos) this.fail(`truncated ${what}: ${n} entries declared, ${this.end - this.pos} bytes left`, at);
    return n;
  }

  /** Length of a str value whose bytes start at `this.pos` afterwards, or -1 if not a str. */
  private tryStrHeader(what: string): number {
    const at = this.pos;
    const b = this.peek(what);
    let n: number;
    if (b >= 0xa0 && b <= 0xbf) n = b & 0x1f;
    else if (b >= 0xd9 && b <= 0xdb) n = -1;
    else return -1;
    this.pos++;
    if (n < 0) n = this.length(b === 0xd9 ? 1 : b === 0xda ? 2 : 4, what, at);
    this.need(n, what, at);
    return n;
  }

  str(what: string): string {
    const at = this.pos;
    const n = this.tryStrHeader(what);
    if (n < 0) this.fail(`${what}: expected string, got ${typeName(this.bytes[at]!)}`);
    return this.utf8(n, what, at);
  }

  strOrNil(what: string): string | null {
    return this.nil(what) ? null : this.str(what);
  }

  /** Reads a str and returns its id in `table`, or -1 for an unknown string. */
  key(table: KeyTable, what: string): number {
    const at = this.pos;
    const n = this.tryStrHeader(what);
    if (n < 0) this.fail(`${what}: expected string, got ${typeName(this.bytes[at]!)}`);
    const id = table.find(this.bytes, this.pos, n);
    this.pos += n;
    return id;
  }

  private utf8(n: number, what: string, at: number): string {
    const bytes = this.bytes;
    const start = this.pos;
    this.pos += n;
    // Short ASCII strings (media, names, tags) are built directly: far cheaper than TextDecoder.
    if (n <= 24) {
      let s = "";
      for (let i = start; i < start + n; i++) {
        const c = bytes[i]!;
        if (c >= 0x80) return this.utf8Slow(start, n, what, at);
        s += String.fromCharCode(c);
      }
      return s;
    }
    return this.utf8Slow(start, n, what, at);
  }

  private utf8Slow(start: number, n: number, what: string, at: number): string {
    try {
      return utf8.decode(this.bytes.subarray(start, start + n));
    } catch {
      return this.fail(`${what}: invalid UTF-8`, at);
    }
  }

  /** An integer as a JS number; 64-bit forms must fit the safe-integer range. */
  int(what: string): number {
    const at = this.pos;
    const b = this.peek(what);
    this.pos++;
    if (b < 0x80) return b;
    if (b >= 0xe0) return b - 0x100;
    const v = this.view;
    switch (b) {
      case 0xcc: this.need(1, what, at); return this.bytes[this.pos++]!;
      case 0xcd: this.need(2, what, at); this.pos += 2; return v.getUint16(this.pos - 2);
      case 0xce: this.need(4, what, at); this.pos += 4; return v.getUint32(this.pos - 4);
      case 0xd0: this.need(1, what, at); this.pos += 1; return v.getInt8(this.pos - 1);
      case 0xd1: this.need(2, what, at); this.pos += 2; return v.getInt16(this.pos - 2);
      case 0xd2: this.need(4, what, at); this.pos += 4; return v.getInt32(this.pos - 4);
      case 0xcf:
      case 0xd3: {
        this.need(8, what, at);
        const big = b === 0xcf ? v.getBigUint64(this.pos) : v.getBigInt64(this.pos);
        this.pos += 8;
        const n = Number(big);
        if (!Number.isSafeInteger(n)) this.fail(`${what}: ${big} is outside the safe integer range`, at);
        return n;
      }
    }
    return this.fail(`${what}: expected int, got ${typeName(b)}`, at);
  }

  intOrNil(what: string): number | null {
    return this.nil(what) ? null : this.int(what);
  }

  /** An integer within [min, max]. */
  intIn(what: string, min: number, max: number): number {
    const at = this.pos;
    const n = this.int(what);
    if (n < min || n > max) this.fail(`${what}: ${n} is outside [${min}, ${max}]`, at);
    return n;
  }

  /** Any number (float32, float64 or int) as a JS number. */
  number(what: string): number {
    const at = this.pos;
    const b = this.peek(what);
    if (b === 0xcb) {
      this.pos++;
      this.need(8, what, at);
      this.pos += 8;
      return this.view.getFloat64(this.pos - 8);
    }
    if (b === 0xca) {
      this.pos++;
      this.need(4, what, at);
      this.pos += 4;
      return this.view.getFloat32(this.pos - 4);
    }
    if (typeName(b) !== "int") this.fail(`${what}: expected number, got ${typeName(b)}`);
    return this.int(what);
  }

  /**
   * A 64-bit hash as u64: unsigned ints as is, signed ints reinterpreted (two's complement, as
   * vLLM's Python `hash()` may produce), bytes hashes by their last 8 bytes big-endian.
   */
  hash(what: string): bigint {
    const at = this.pos;
    const b = this.peek(what);
    this.pos++;
    if (b < 0x80) return BigInt(b);
    const v = this.view;
    switch (b) {
      case 0xcf:
      case 0xd3: // the same 8 bytes read unsigned = the two's-complement reinterpretation
        this.need(8, what, at);
        this.pos += 8;
        return v.getBigUint64(this.pos - 8);
      case 0xc4:
      case 0xc5:
      case 0xc6: {
        this.pos = at;
        const bin = this.binRange(what);
        if (bin.len < 8) this.fail(`${what}: bytes hash has ${bin.len} bytes, needs at least 8`, at);
        return v.getBigUint64(bin.start + bin.len - 8);
      }
    }
    this.pos = at;
    if (typeName(b) !== "int") this.fail(`${what}: expected int or bytes hash, got ${typeName(b)}`);
    const n = this.int(what);
    return n >= 0 ? BigInt(n) : BigInt.asUintN(64, BigInt(n));
  }

  hashOrNil(what: string): bigint | null {
    return this.nil(what) ? null : this.hash(what);
  }

  /** Start and length of a bin value's bytes (consumed). */
  private binRange(what: string): { start: number; len: number } {
    const at = this.pos;
    const b = this.peek(what);
    if (b < 0xc4 || b > 0xc6) return this.fail(`${what}: expected bytes, got ${typeName(b)}`, at);
    this.pos++;
    const len = this.length(b === 0xc4 ? 1 : b === 0xc5 ? 2 : 4, what, at);
    this.need(len, what, at);
    const start = this.pos;
    this.pos += len;
    return { start, len };
  }

  /** Reads a generic value (extra keys): scalars, bytes, arrays; maps and ext are refused. */
  value(what: string, depth = 0): MsgpackValue {
    if (depth > MAX_DEPTH) this.fail(`${what}: nested deeper than ${MAX_DEPTH} levels`);
    const at = this.pos;
    const b = this.peek(what);
    switch (typeName(b)) {
      case "nil": this.pos++; return null;
      case "bool": this.pos++; return b === 0xc3;
      case "float": return this.number(what);
      case "string": return this.str(what);
      case "int":
        if (b === 0xcf || b === 0xd3) {
          this.pos++;
          this.need(8, what, at);
          this.pos += 8;
          return b === 0xcf ? this.view.getBigUint64(this.pos - 8) : this.view.getBigInt64(this.pos - 8);
        }
        return this.int(what);
      case "bytes": {
        const { start, len } = this.binRange(what);
        return this.bytes.slice(start, start + len);
      }
      case "array": {
        const n = this.arrayHeader(what);
        const out: MsgpackValue[] = [];
        for (let i = 0; i < n; i++) out.push(this.value(what, depth + 1));
        return out;
      }
    }
    return this.fail(`${what}: unsupported ${typeName(b)} value`, at);
  }

  /** Skips one well-formed value of any type (unknown keys, future positional fields). */
  skip(what: string, depth = 0): void {
    if (depth > MAX_DEPTH) this.fail(`${what}: nested deeper than ${MAX_DEPTH} levels`);
    const at = this.pos;
    const b = this.peek(what);
    const name = typeName(b);
    if (name === "array") {
      const n = this.arrayHeader(what);
      for (let i = 0; i < n; i++) this.skip(what, depth + 1);
    } else if (name === "map") {
      const n = this.tryMapHeader(what);
      for (let i = 0; i < 2 * n; i++) this.skip(what, depth + 1);
    } else if (name === "ext") {
      this.pos++;
      const len = FIXEXT_LENGTH[b] ?? this.length(b === 0xc7 ? 1 : b === 0xc8 ? 2 : 4, what, at);
      this.need(len + 1, what, at); // type byte + data
      this.pos += len + 1;
    } else if (name === "reserved byte 0xc1") {
      this.fail(`${what}: invalid msgpack byte 0xc1`);
    } else {
      this.value(what, depth);
    }
  }
}
