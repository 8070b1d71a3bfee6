// Purpose-built msgpack writer for the wire codecs: one reused, growable buffer and exact control
// of every encoding choice (float64 always, smallest ints, u64 hashes `cf` or smallest), which msgpackr
// cannot give (it writes integral floats as ints and positive bigints below 2^63 as int64 `d3`).
import { KvcrError } from "../lib/errors.ts";

const MAX_U64 = 0xffff_ffff_ffff_ffffn;
const MIN_I64 = -0x8000_0000_0000_0000n;
const TWO_32 = 0x1_0000_0000;

/** Code of the KvcrError thrown for a value with no wire form: a caller bug, not bad input bytes
 * (no subclass: nobody branches on it). */
export const ENCODE_INVALID = "ENCODE_INVALID";

export function encodeError(message: string): KvcrError {
  return new KvcrError(ENCODE_INVALID, message);
}

/** A string pre-encoded as a complete msgpack str (header + UTF-8), for constant keys. */
export function preEncodeStr(s: string): Uint8Array {
  const w = new MsgpackWriter(s.length * 3 + 8);
  w.writeStr(s);
  return w.finish();
}

export class MsgpackWriter {
  private buf: Uint8Array;
  private view: DataView;
  private pos = 0;
  private readonly textEncoder = new TextEncoder();

  constructor(initialBytes = 4096) {
    this.buf = new Uint8Array(initialBytes);
    this.view = new DataView(this.buf.buffer);
  }

  /** Starts a new message; the buffer (and its grown size) is kept. */
  reset(): void {
    this.pos = 0;
  }

  get length(): number {
    return this.pos;
  }

  /** A copy of the bytes written since reset(), so the internal buffer can be reused at once. */
  finish(): Uint8Array {
    return this.buf.slice(0, this.pos);
  }

  private ensure(extra: number): void {
    if (this.pos + extra <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.pos + extra) size *= 2;
    const next = new Uint8Array(size);
    next.set(this.buf.subarray(0, this.pos));
    this.buf = next;
    this.view = new DataView(next.buffer);
  }

  writeNil(): void {
    this.ensure(1);
    this.buf[this.pos++] = 0xc0;
  }

  writeBool(value: boolean): void {
    this.ensure(1);
    this.buf[this.pos++] = value ? 0xc3 : 0xc2;
  }

  writeArrayHeader(count: number): void {
    this.writeContainerHeader(count, 0x90, 0xdc);
  }

  writeMapHeader(count: number): void {
    this.writeContainerHeader(count, 0x80, 0xde);
  }

  private writeContainerHeader(count: number, fix: number, code16: number): void {
    this.ensure(5);
    const b = this.buf;
    if (count < 16) {
      b[this.pos++] = fix | count;
    } else if (count < 0x10000) {
      b[this.pos++] = code16;
      b[this.pos++] = count >>> 8;
      b[this.pos++] = count & 0xff;
    } else {
      b[this.pos++] = code16 + 1;
      this.view.setUint32(this.pos, count);
      this.pos += 4;
    }
  }

  /** A non-negative safe integer in its smallest msgpack form. */
  writeUint(n: number): void {
    this.ensure(9);
    const b = this.buf;
    if (n >>> 0 === n) {
      if (n < 0x80) {
        b[this.pos++] = n;
      } else if (n < 0x100) {
        b[this.pos++] = 0xcc;
        b[this.pos++] = n;
      } else if (n < 0x10000) {
        b[this.pos++] = 0xcd;
        b[this.pos++] = n >>> 8;
        b[this.pos++] = n & 0xff;
      } else {
        b[this.pos++] = 0xce;
        this.view.setUint32(this.pos, n);
        this.pos += 4;
      }
    } else if (Number.isSafeInteger(n) && n > 0) {
      b[this.pos++] = 0xcf;
      this.view.setUint32(this.pos, Math.floor(n / TWO_32));
      this.view.setUint32(this.pos + 4, n >>> 0);
      this.pos += 8;
    } else {
      throw encodeError(`expected a non-negative safe integer, got ${n}`);
    }
  }

  /** Any safe integer in its smallest msgpack form (uint forms for n >= 0, as msgspec does). */
  writeInt(n: number): void {
    if (n >= 0) return this.writeUint(n);
    this.ensure(9);
    const b = this.buf;
    if (n >= -32 && (n | 0) === n) {
      b[this.pos++] = n & 0xff;
    } else if (n >= -0x80 && (n | 0) === n) {
      b[this.pos++] = 0xd0;
      b[this.pos++] = n & 0xff;
    } else if (n >= -0x8000 && (n | 0) === n) {
      b[this.pos++] = 0xd1;
      this.view.setInt16(this.pos, n);
      this.pos += 2;
    } else if ((n | 0) === n) {
      b[this.pos++] = 0xd2;
      this.view.setInt32(this.pos, n);
      this.pos += 4;
    } else if (Number.isSafeInteger(n)) {
      b[this.pos++] = 0xd3;
      this.view.setBigInt64(this.pos, BigInt(n));
      this.pos += 8;
    } else {
      throw encodeError(`expected a safe integer, got ${n}`);
    }
  }

  writeFloat64(x: number): void {
    this.ensure(9);
    this.buf[this.pos++] = 0xcb;
    this.view.setFloat64(this.pos, x);
    this.pos += 8;
  }

  /** A 64-bit hash, always as uint64 `cf` whatever its magnitude (vLLM/msgspec wire form). */
  writeU64(h: bigint): void {
    if (h < 0n || h > MAX_U64) throw encodeError(`hash ${h} is outside u64 range`);
    this.ensure(9);
    this.buf[this.pos++] = 0xcf;
    this.view.setBigUint64(this.pos, h);
    this.pos += 8;
  }

  /**
   * A 64-bit hash in its smallest unsigned form, as msgspec writes a Python int (vLLM's KV
   * events): below 2^32 as fixint / `cc` / `cd` / `ce`, from 2^32 on as `cf`.
   */
  writeU64Smallest(h: bigint): void {
    if (h >= 0n && h <= 0xffff_ffffn) return this.writeUint(Number(h));
    this.writeU64(h);
  }

  /** A bigint as `cf` (>= 0) or `d3` (< 0): the 64-bit forms, so it decodes back as a bigint. */
  writeBigInt(v: bigint): void {
    if (v >= 0n) return this.writeU64(v);
    if (v < MIN_I64) throw encodeError(`integer ${v} is outside int64 range`);
    this.ensure(9);
    this.buf[this.pos++] = 0xd3;
    this.view.setBigInt64(this.pos, v);
    this.pos += 8;
  }

  writeStr(s: string): void {
    const n = s.length;
    this.ensure(n + 5);
    // ASCII fast path: byte length = string length, written without TextEncoder.
    const start = this.pos;
    this.writeStrHeader(n);
    const b = this.buf;
    let p = this.pos;
    for (let i = 0; i < n; i++) {
      const c = s.charCodeAt(i);
      if (c >= 0x80) {
        this.pos = start;
        return this.writeUtf8Str(s);
      }
      b[p++] = c;
    }
    this.pos = p;
  }

  private writeUtf8Str(s: string): void {
    const bytes = this.textEncoder.encode(s);
    this.ensure(bytes.length + 5);
    this.writeStrHeader(bytes.length);
    this.buf.set(bytes, this.pos);
    this.pos += bytes.length;
  }

  private writeStrHeader(len: number): void {
    const b = this.buf;
    if (len < 32) {
      b[this.pos++] = 0xa0 | len;
    } else if (len < 0x100) {
      b[this.pos++] = 0xd9;
      b[this.pos++] = len;
    } else if (len < 0x10000) {
      b[this.pos++] = 0xda;
      b[this.pos++] = len >>> 8;
      b[this.pos++] = len & 0xff;
    } else {
      b[this.pos++] = 0xdb;
      this.view.setUint32(this.pos, len);
      this.pos += 4;
    }
  }

  writeBin(bytes: Uint8Array): void {
    const len = bytes.length;
    this.ensure(len + 5);
    const b = this.buf;
    if (len < 0x100) {
      b[this.pos++] = 0xc4;
      b[this.pos++] = len;
    } else if (len < 0x10000) {
      b[this.pos++] = 0xc5;
      b[this.pos++] = len >>> 8;
      b[this.pos++] = len & 0xff;
    } else {
      b[this.pos++] = 0xc6;
      this.view.setUint32(this.pos, len);
      this.pos += 4;
    }
    b.set(bytes, this.pos);
    this.pos += len;
  }

  /** Bytes that are already valid msgpack (e.g. a preEncodeStr key). */
  writeRaw(bytes: Uint8Array): void {
    const len = bytes.length;
    this.ensure(len);
    const b = this.buf;
    // Short constant keys: a byte loop beats TypedArray.set's call overhead.
    if (len <= 32) {
      let p = this.pos;
      for (let i = 0; i < len; i++) b[p++] = bytes[i]!;
      this.pos = p;
    } else {
      b.set(bytes, this.pos);
      this.pos += len;
    }
  }
}
