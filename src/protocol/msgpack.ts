// The project's one msgpack entry point: nothing else imports msgpackr. Wire codecs use the
// purpose-built writer/reader (exact bytes, precise error offsets, faster: see bench/codec.ts);
// the configured msgpackr instance reads and writes msgpack off the measured path: the `events`
// tap's view of payloads the wire decoder refuses, and the tests' and bench/codec.ts's reference.
import { C1, Packr } from "msgpackr";

export { ENCODE_INVALID, encodeError, MsgpackWriter, preEncodeStr } from "./msgpack-writer.ts";
export { KeyTable } from "./msgpack-key-table.ts";
export { MAX_DEPTH, MsgpackReader, typeName } from "./msgpack-reader.ts";
export type { MsgpackScalar, MsgpackValue } from "./msgpack-reader.ts";

/**
 * Plain msgpack, no msgpackr extensions: records off (no shared structures on the wire), maps
 * decode as objects, bigints encode as 64-bit ints (`d3` below 2^63: hence not used for hashes on
 * the wire) and 64-bit ints decode as bigint.
 */
export const packr = new Packr({
  useRecords: false,
  mapsAsObjects: true,
  int64AsType: "bigint",
  variableMapSize: true,
});

export function pack(value: unknown): Uint8Array {
  return packr.pack(value);
}

/** Generic decode; throws msgpackr's own errors (wire decoders use MsgpackReader instead). */
export function unpack(bytes: Uint8Array): unknown {
  return packr.unpack(bytes);
}

/** A JSON-safe value: what unpackJson returns. */
export type PlainJson = null | boolean | number | string | PlainJson[] | { [key: string]: PlainJson };

/**
 * Any msgpack value as JSON, exactly: 64-bit ints (decoded as bigint) as decimal strings, bytes as
 * lowercase hex, timestamps as ISO 8601, map keys as strings. Throws on bytes that are not one whole
 * msgpack value (trailing bytes, the reserved byte 0xc1 and unknown extension types included).
 */
export function unpackJson(bytes: Uint8Array): PlainJson {
  return toJson(packr.unpack(bytes));
}

function toJson(v: unknown): PlainJson {
  if (v === null || v === undefined) return null;
  if (typeof v === "bigint") return v.toString();
  if (typeof v === "number") return Number.isFinite(v) ? v : String(v);
  if (typeof v === "boolean" || typeof v === "string") return v;
  if (v instanceof Uint8Array) return Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString("hex");
  if (v instanceof Date) return Number.isNaN(v.getTime()) ? null : v.toISOString();
  if (Array.isArray(v)) return v.map(toJson);
  if (v instanceof Map) return Object.fromEntries([...v].map(([k, x]) => [String(k), toJson(x)]));
  // msgpackr hands the reserved byte back as a marker object instead of refusing it.
  if (v === C1 || Object.getPrototypeOf(v) !== Object.prototype) throw new Error("not plain msgpack (reserved byte 0xc1 or an unknown extension)");
  // fromEntries: a "__proto__" key stays an own key, never the object's prototype.
  return Object.fromEntries(Object.entries(v as object).map(([k, x]) => [k, toJson(x)]));
}
