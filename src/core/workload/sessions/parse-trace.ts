// Which trace format a file is (named with --trace-format, or told from its first row) and its
// parse: plain Mooncake rows stay independent requests at their timestamps; Mooncake rows with
// sessions, aiperf's multi_turn and Alibaba's bailian trace become sessions of turns.
import { parseMooncakeTrace } from "../mooncake-trace.ts";
import type { TraceFormat } from "../../../protocol/trace-formats.ts";
import type { WorkloadRequest } from "../workload.ts";
import type { SessionLineError } from "./assemble.ts";
import { parseBailianTrace } from "./bailian-trace.ts";
import { hasSessionFields, parseMooncakeSessions } from "./mooncake-sessions.ts";
import { parseMultiTurn } from "./multi-turn.ts";
import { jsonLines } from "./row-fields.ts";


export interface ParsedAnyTrace {
  format: Exclude<TraceFormat, "auto">;
  requests: WorkloadRequest[];
  errors: SessionLineError[];
  lines: number;
  /** Session traces only: how many sessions, and those dropped for a bad line. */
  sessions?: number;
  dropped?: { sessions: number; turns: number };
}

/** The format of a trace from its first JSON-object row: `turns` → multi_turn, `chat_id` → bailian_trace, else mooncake_trace. */
export function detectTraceFormat(text: string): Exclude<TraceFormat, "auto"> {
  for (const { text: line } of jsonLines(text)) {
    let o: unknown;
    try {
      o = JSON.parse(line);
    } catch {
      continue;
    }
    if (typeof o !== "object" || o === null || Array.isArray(o)) continue;
    if ("turns" in o) return "multi_turn";
    if ("chat_id" in o) return "bailian_trace";
    return "mooncake_trace";
  }
  return "mooncake_trace";
}

export interface TraceParseOptions {
  format: TraceFormat;
  /** Tokens per Mooncake hash id (bailian ids are always 16 tokens). */
  traceBlockSize: number;
  /** multi_turn turns without output_length / max_tokens ask for this many. */
  defaultOutputTokens: number;
}

export function parseTrace(text: string, o: TraceParseOptions): ParsedAnyTrace {
  const format = o.format === "auto" ? detectTraceFormat(text) : o.format;
  if (format === "mooncake_trace" && !hasSessionFields(text)) return { format, ...parseMooncakeTrace(text, o.traceBlockSize) };
  const parsed = format === "multi_turn" ? parseMultiTurn(text, o.defaultOutputTokens) : format === "bailian_trace" ? parseBailianTrace(text) : parseMooncakeSessions(text, o.traceBlockSize);
  return { format, ...parsed };
}
