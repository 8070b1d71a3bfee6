// The project's one msgpack entry point: nothing else in src/ imports msgpackr. Wire codecs use the
// purpose-built writer/reader (exact bytes, precise error offsets, faster: see bench/codec.ts);
// the configured msgpackr instance is the independent reference the tests and bench/codec.ts use.
import { Packr } from "msgpackr";

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
