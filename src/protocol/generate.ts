// The mocker's worker API (SPEC §3): POST /v1/generate request bodies and the NDJSON lines of
// its streamed response. Parsing returns a problem string instead of throwing (HTTP 400).

export interface GenerateRequest {
  worker: number;
  dpRank: number;
  tokenIds: number[];
  maxTokens: number;
  requestId?: string;
  /** Router hint (SPEC §6.4): logged by the mocker, never acted on. */
  kvHint?: Record<string, unknown>;
}

export interface GenerateSummary {
  finish_reason: "length" | "cancelled";
  prompt_tokens: number;
  cached_tokens: number;
  host_loaded_tokens: number;
  completion_tokens: number;
}

const KNOWN_KEYS = new Set(["worker", "dp_rank", "token_ids", "max_tokens", "request_id", "kv_hint"]);
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
  if (b.kv_hint !== undefined && (typeof b.kv_hint !== "object" || b.kv_hint === null || Array.isArray(b.kv_hint))) {
    return fail(`kv_hint: expected a JSON object, got ${show(b.kv_hint)}`);
  }
  return {
    ok: true,
    value: {
      worker,
      dpRank,
      tokenIds: tokenIds as number[],
      maxTokens,
      requestId: b.request_id as string | undefined,
      kvHint: b.kv_hint as Record<string, unknown> | undefined,
    },
  };
}

export function tokenLine(tokenId: number): string {
  return `{"token_id":${tokenId}}\n`;
}

export function summaryLine(s: GenerateSummary): string {
  return `${JSON.stringify(s)}\n`;
}

function isNonNegInt(v: unknown): v is number {
  return typeof v === "number" && Number.isInteger(v) && v >= 0;
}

function show(v: unknown): string {
  const text = JSON.stringify(v) ?? String(v);
  return text.length > 40 ? `${text.slice(0, 37)}...` : text;
}
