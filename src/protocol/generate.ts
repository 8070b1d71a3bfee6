// The mocker's worker API, POST /v1/generate: the request body (as sent, and as validated with a
// problem string instead of a throw → HTTP 400), its router hint, and the NDJSON lines of the
// streamed response (token lines, then one summary line), written and read.
import type { BootstrapInfo } from "./dynamo/bootstrap.ts";
import { parseKvTransferParams, type KvTransferParams } from "./kv-transfer-params.ts";

/** The body as the frontend sends it. */
export interface GenerateBody {
  worker: number;
  dp_rank: number;
  token_ids: readonly number[];
  max_tokens: number;
  request_id: string;
  kv_hint?: KvHint;
  /** vLLM NixlConnector's params (kv-transfer-params.ts): a P/D leg. */
  kv_transfer_params?: Record<string, unknown>;
  /** The LoRA adapter to run under (vLLM's lora_name); absent = the base model. */
  lora_name?: string;
}

/** A router hint: which peer holds a longer prefix of the prompt. The mocker logs it, never acts on it. */
export interface KvHint {
  protocol_version: "0.1";
  message_id: string;
  actions: {
    action_id: string;
    action_type: "kv.fetch";
    action_version: "1.0";
    payload: { source_control_endpoint: string; block_hashes: string[] };
  }[];
}

/** The body as the mocker validated it. */
export interface GenerateRequest {
  worker: number;
  dpRank: number;
  tokenIds: number[];
  maxTokens: number;
  requestId?: string;
  /** The LoRA adapter to run under; absent = the base model. */
  loraName?: string;
  /** Logged by the mocker, never acted on. */
  kvHint?: Record<string, unknown>;
  /** A disaggregated leg's transfer params (prefill: do_remote_decode; decode: where to pull from). */
  kvTransferParams?: KvTransferParams;
  /** Dynamo's legs sent at once: the rendezvous of the two (protocol/dynamo/bootstrap.ts). */
  bootstrap?: BootstrapInfo;
}

export interface GenerateSummary {
  finish_reason: "length" | "cancelled";
  prompt_tokens: number;
  cached_tokens: number;
  host_loaded_tokens: number;
  completion_tokens: number;
  /** A prefill worker's NixlConnector reply (do_remote_decode requests that finished on their length cap). */
  kv_transfer_params?: Record<string, unknown>;
}

export type GenerateLine = { token_id: number } | GenerateSummary;

const KNOWN_KEYS = new Set(["worker", "dp_rank", "token_ids", "max_tokens", "request_id", "kv_hint", "kv_transfer_params", "lora_name"]);
const MAX_TOKEN_ID = 0xffff_ffff;

export type ParseResult<T> = { ok: true; value: T } | { ok: false; problem: string };

/** Validates a decoded JSON body; every problem names the field. */
export function parseGenerateRequest(body: unknown, limits: { maxPromptTokens: number; maxOutputTokens: number }): ParseResult<GenerateRequest> {
  const fail = (problem: string) => ({ ok: false as const, problem });
  if (typeof body !== "object" || body === null || Array.isArray(body)) return fail("body must be a JSON object");
  const b = body as Record<string, unknown>;
  for (const key of Object.keys(b)) if (!KNOWN_KEYS.has(key)) return fail(`unknown field "${key}"`);
  const worker = b.worker;
  if (!isNonNegInt(worker)) return fail(`worker: expected a non-negative integer, got ${show(worker)}`);
  const dpRank = b.dp_rank ?? 0;
  if (!isNonNegInt(dpRank)) return fail(`dp_rank: expected a non-negative integer, got ${show(dpRank)}`);
  const tokenIds = b.token_ids;
  if (!Array.isArray(tokenIds) || tokenIds.length === 0) return fail(`token_ids: expected a non-empty array of token ids, got ${show(tokenIds)}`);
  if (tokenIds.length > limits.maxPromptTokens) return fail(`token_ids: ${tokenIds.length} tokens exceed the limit of ${limits.maxPromptTokens}`);
  for (let i = 0; i < tokenIds.length; i++) {
    const t = tokenIds[i];
    if (!isNonNegInt(t) || t > MAX_TOKEN_ID) return fail(`token_ids[${i}]: expected an integer from 0 to ${MAX_TOKEN_ID}, got ${show(t)}`);
  }
  const maxTokens = b.max_tokens;
  if (!isNonNegInt(maxTokens) || maxTokens < 1 || maxTokens > limits.maxOutputTokens) {
    return fail(`max_tokens: expected an integer from 1 to ${limits.maxOutputTokens}, got ${show(maxTokens)}`);
  }
  if (b.request_id !== undefined && (typeof b.request_id !== "string" || b.request_id.length === 0 || b.request_id.length > 256)) {
    return fail(`request_id: expected a string of 1 to 256 characters, got ${show(b.request_id)}`);
  }
  if (b.lora_name !== undefined && (typeof b.lora_name !== "string" || b.lora_name.length === 0 || b.lora_name.length > 256)) {
    return fail(`lora_name: expected an adapter name of 1 to 256 characters, got ${show(b.lora_name)}`);
  }
  if (b.kv_hint !== undefined && (typeof b.kv_hint !== "object" || b.kv_hint === null || Array.isArray(b.kv_hint))) {
    return fail(`kv_hint: expected a JSON object, got ${show(b.kv_hint)}`);
  }
  let kvTransferParams: KvTransferParams | undefined;
  if (b.kv_transfer_params !== undefined && b.kv_transfer_params !== null) {
    const p = parseKvTransferParams(b.kv_transfer_params);
    if (!p.ok) return fail(p.problem);
    kvTransferParams = p.value;
  }
  return {
    ok: true,
    value: {
      ...(kvTransferParams ? { kvTransferParams } : {}),
      worker,
      dpRank,
      tokenIds: tokenIds as number[],
      maxTokens,
      requestId: b.request_id as string | undefined,
      ...(b.lora_name !== undefined ? { loraName: b.lora_name as string } : {}),
      kvHint: b.kv_hint as Record<string, unknown> | undefined,
    },
  };
}

/** How every token line starts; a writer that formats lines as bytes starts from it too. */
export const TOKEN_LINE_PREFIX = '{"token_id":';

export function tokenLine(tokenId: number): string {
  return `${TOKEN_LINE_PREFIX}${tokenId}}\n`;
}

export function summaryLine(s: GenerateSummary): string {
  return `${JSON.stringify(s)}\n`;
}

/** Reads a response body's lines as its chunks arrive (a line may span chunks); blank lines are skipped. */
export class GenerateLineReader {
  private readonly decoder = new TextDecoder();
  private rest = "";

  /** The lines `chunk` completes, each parsed as it is taken. */
  *push(chunk: Uint8Array): Generator<GenerateLine> {
    const text = this.rest + this.decoder.decode(chunk, { stream: true });
    this.rest = "";
    let start = 0;
    for (let nl = text.indexOf("\n"); nl >= 0; nl = text.indexOf("\n", start)) {
      const line = text.slice(start, nl);
      start = nl + 1;
      if (line.trim().length > 0) yield parseLine(line);
    }
    this.rest = text.slice(start);
  }

  /** At the end of the body: its last line when no newline closed it. */
  *end(): Generator<GenerateLine> {
    const line = this.rest + this.decoder.decode();
    this.rest = "";
    if (line.trim().length > 0) yield parseLine(line);
  }
}

/** Every line of a whole response body. */
export function parseGenerateBody(body: Uint8Array): GenerateLine[] {
  const reader = new GenerateLineReader();
  return [...reader.push(body), ...reader.end()];
}

function parseLine(line: string): GenerateLine {
  return JSON.parse(line) as GenerateLine;
}

function isNonNegInt(v: unknown): v is number {
  return typeof v === "number" && Number.isInteger(v) && v >= 0;
}

function show(v: unknown): string {
  const text = JSON.stringify(v) ?? String(v);
  return text.length > 40 ? `${text.slice(0, 37)}...` : text;
}
