// The trace formats replay and bench read, by aiperf's dataset-type names: Mooncake rows (with
// sessions when they carry session_id / delay), aiperf's multi_turn, Alibaba's bailian trace.
export const TRACE_FORMATS = ["auto", "mooncake_trace", "multi_turn", "bailian_trace"] as const;
export type TraceFormat = (typeof TRACE_FORMATS)[number];
