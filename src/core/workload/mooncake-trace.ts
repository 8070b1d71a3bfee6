// Mooncake-style JSONL traces: one object per line with `timestamp` (ms),
// `input_length`, `output_length` and `hash_ids`; each hash id expands to traceBlockSize copies
// of that token id, truncated to input_length (as Dynamo's mocker synthesizes them). Bad lines
// are collected with their line number; the caller decides to stop or skip them.
import { jsonLines, parseObject } from "./sessions/row-fields.ts";
import type { WorkloadRequest } from "./workload.ts";

export const DEFAULT_TRACE_BLOCK_SIZE = 512;
const U32_MAX = 0xffffffff;

export interface TraceLineError {
  /** 1-based line number in the file. */
  line: number;
  message: string;
}

export interface ParsedTrace {
  requests: WorkloadRequest[];
  errors: TraceLineError[];
  /** Non-empty lines read. */
  lines: number;
}

export interface TraceRow {
  timestampMs: number;
  inputLength: number;
  outputLength: number;
  hashIds: Uint32Array;
  /** The row's LoRA adapter (`lora_name`), if any. */
  loraName?: string;
}

export function parseMooncakeTrace(text: string, traceBlockSize = DEFAULT_TRACE_BLOCK_SIZE): ParsedTrace {
  const requests: WorkloadRequest[] = [];
  const errors: TraceLineError[] = [];
  let lines = 0;
  for (const { line: lineNo, text: line } of jsonLines(text)) {
    lines++;
    const row = parseTraceLine(line, traceBlockSize);
    if (typeof row === "string") errors.push({ line: lineNo, message: row });
    else requests.push(traceRequest(row, traceBlockSize));
  }
  return { requests, errors, lines };
}

/** One line to a row, or a message saying what is wrong with it. */
export function parseTraceLine(line: string, traceBlockSize: number): TraceRow | string {
  const o = parseObject(line);
  if (typeof o === "string") return o;
  const missing = ["timestamp", "input_length", "output_length", "hash_ids"].filter((k) => o[k] === undefined || o[k] === null);
  if (missing.length > 0) return `missing field${missing.length > 1 ? "s" : ""} ${missing.join(", ")}`;
  const ts = o.timestamp;
  if (typeof ts !== "number" || !Number.isFinite(ts) || ts < 0) return `timestamp must be a number of ms ≥ 0, got ${JSON.stringify(ts)}`;
  const input = lengthField(o, "input_length");
  if (typeof input === "string") return input;
  const output = lengthField(o, "output_length");
  if (typeof output === "string") return output;
  if (!Array.isArray(o.hash_ids)) return `hash_ids must be an array of integers, got ${JSON.stringify(o.hash_ids)}`;
  const ids = o.hash_ids as unknown[];
  const hashIds = new Uint32Array(ids.length);
  for (let i = 0; i < ids.length; i++) {
    const id = ids[i];
    if (typeof id !== "number" || !Number.isInteger(id) || id < 0 || id > U32_MAX) return `hash_ids[${i}] must be an integer from 0 to ${U32_MAX}, got ${JSON.stringify(id)}`;
    hashIds[i] = id;
  }
  if (input > ids.length * traceBlockSize) {
    return `input_length ${input} is longer than its ${ids.length} hash ids allow at --trace-block-size ${traceBlockSize} (at most ${ids.length * traceBlockSize} tokens)`;
  }
  const lora = o.lora_name;
  const loraProblem = loraNameProblem(lora);
  if (loraProblem !== undefined) return loraProblem;
  return { timestampMs: ts, inputLength: input, outputLength: output, hashIds, ...(typeof lora === "string" ? { loraName: lora } : {}) };
}

/** A row's `lora_name`: absent, null (the base model) or an adapter's name; else what is wrong. */
export function loraNameProblem(lora: unknown): string | undefined {
  if (lora !== undefined && lora !== null && (typeof lora !== "string" || lora === "")) return `lora_name must be a LoRA adapter's name (a non-empty string) or null, got ${JSON.stringify(lora)}`;
  return undefined;
}

function lengthField(o: Record<string, unknown>, key: string): number | string {
  const v = o[key];
  if (typeof v !== "number" || !Number.isInteger(v)) return `${key} must be an integer, got ${JSON.stringify(v)}`;
  if (v < 0) return `${key} must not be negative, got ${v}`;
  if (v === 0) return `${key} must be at least 1, got 0`;
  return v;
}

function traceRequest(row: TraceRow, traceBlockSize: number): WorkloadRequest {
  return {
    timestampMs: row.timestampMs,
    inputLength: row.inputLength,
    outputLength: row.outputLength,
    ...(row.loraName !== undefined ? { loraName: row.loraName } : {}),
    writeTokens: (out) => expandHashIds(row.hashIds, row.inputLength, traceBlockSize, out),
  };
}

/** Each hash id becomes traceBlockSize copies of itself, truncated to inputLength tokens. */
export function expandHashIds(hashIds: Uint32Array, inputLength: number, traceBlockSize: number, out: Uint32Array = new Uint32Array(inputLength)): Uint32Array {
  for (let b = 0, at = 0; at < inputLength; b++, at += traceBlockSize) out.fill(hashIds[b]!, at, Math.min(inputLength, at + traceBlockSize));
  return out;
}
