// Public surface of the vLLM KV-event codec (SPEC §4.2): types, encode, decode, JSON view, seq frames.
export * from "./types.ts";
export { encodeBatch, KvEventEncoder, KvEventsEncoding } from "./encode.ts";
export { decodeBatch } from "./decode.ts";
export { batchToJson, eventToJson } from "./json.ts";
export type { BatchJsonContext, JsonValue, KvEventBatchJson } from "./json.ts";
export { decodeSeq, encodeSeq, REPLAY_END_SEQ } from "../seq-frame.ts";
