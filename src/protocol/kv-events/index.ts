// Public surface of the vLLM KV-event codec: types, encode, decode, JSON view, seq frames, live
// messages, replay.
export * from "./types.ts";
export { encodeBatch, VllmKvEventEncoder, VllmKvEventsEncoding } from "./encode.ts";
export { decodeBatch } from "./decode.ts";
export { batchToJson, eventToJson } from "./json.ts";
export type { BatchJsonContext, JsonValue, VllmKvEventBatchJson } from "./json.ts";
export { decodeSeq, encodeSeq, REPLAY_END_SEQ } from "../seq-frame.ts";
export { parseReplayReply, parseReplayRequest, replayBatchFrames, replayEndFrames, replayRequest } from "./replay.ts";
export type { ReplayReply } from "./replay.ts";
export { liveSeqNumber, parseLiveMessage } from "./live.ts";
export type { LiveMessage } from "./live.ts";
