// OpenAI API shapes the frontend speaks (docs/http-api.md): request bodies of /v1/completions and
// /v1/chat/completions (validated, every problem naming its field), response and SSE chunk
// bodies, and the error JSON `{"error": {"message", "type", "param", "code"}}` every route uses.
// Sampling fields a mock has no use for (temperature, top_p, stop, ...) are checked for type and
// range as OpenAI's API documents them (400 naming the field) and then ignored; fields this table
// does not name are accepted unread, as vLLM's server accepts them.

export interface OpenAiErrorBody {
  error: { message: string; type: string; param: string | null; code: string | number | null };
}

const TYPE_BY_STATUS: Record<number, string> = {
  400: "invalid_request_error",
  404: "invalid_request_error",
  405: "invalid_request_error",
  408: "invalid_request_error",
  413: "invalid_request_error",
  502: "server_error",
  503: "service_unavailable",
  504: "server_error",
};

export function openAiErrorBody(status: number, message: string, opts: { param?: string; code?: string } = {}): OpenAiErrorBody {
  return { error: { message, type: TYPE_BY_STATUS[status] ?? (status >= 500 ? "server_error" : "invalid_request_error"), param: opts.param ?? null, code: opts.code ?? null } };
}

export function openAiError(status: number, message: string, opts: { param?: string; code?: string } = {}): Response {
  return Response.json(openAiErrorBody(status, message, opts), { status });
}

/** A field problem: 400 with `param` naming it. */
export class BadRequest {
  constructor(
    readonly param: string,
    readonly message: string,
  ) {}
}

export type Prompt = { kind: "text"; text: string } | { kind: "tokens"; ids: number[] };

export interface ChatMessage {
  role: string;
  content: string;
}

export interface GenerationRequest {
  model: string;
  /** Completions: the prompt; chat: undefined (see messages). */
  prompt?: Prompt;
  messages?: ChatMessage[];
  maxTokens: number;
  stream: boolean;
  includeUsage: boolean;
  /** stream_options.continuous_usage_stats (vLLM's): usage on every chunk too; only with include_usage, as vLLM. */
  continuousUsage: boolean;
}

/** OpenAI's documented default for /v1/completions; used for chat too (a mock has no context limit). */
export const DEFAULT_MAX_TOKENS = 16;
export const MAX_TOKEN_ID = 0xffff_ffff;

/** What the parsers enforce beyond field types: the frontend's --max-tokens-limit and --max-prompt-bytes. */
export interface RequestLimits {
  maxOutputTokens: number;
  /** Largest prompt text (completions `prompt`, or all chat messages' content) in UTF-8 bytes, checked before tokenizing. */
  maxPromptBytes: number;
}

type Body = Record<string, unknown>;

function show(v: unknown): string {
  const text = JSON.stringify(v) ?? String(v);
  return text.length > 40 ? `${text.slice(0, 37)}...` : text;
}

type Check = (v: unknown) => string | undefined;

const isNumber = (v: unknown): v is number => typeof v === "number" && Number.isFinite(v);
const numberIn = (lo: number, hi: number, loOpen = false): Check => (v) =>
  isNumber(v) && (loOpen ? v > lo : v >= lo) && v <= hi ? undefined : `expected a number ${loOpen ? "above" : "from"} ${lo} ${loOpen ? "and at most" : "to"} ${hi}`;
const integerIn = (lo: number, hi: number): Check => (v) => (typeof v === "number" && Number.isInteger(v) && v >= lo && v <= hi ? undefined : `expected an integer from ${lo} to ${hi}`);
const bool: Check = (v) => (typeof v === "boolean" ? undefined : "expected true or false");
const string: Check = (v) => (typeof v === "string" ? undefined : "expected a string");
const stop: Check = (v) => (typeof v === "string" || (Array.isArray(v) && v.every((x) => typeof x === "string")) ? undefined : "expected a string or an array of strings");
const logitBias: Check = (v) =>
  typeof v === "object" && v !== null && !Array.isArray(v) && Object.values(v).every((x) => isNumber(x) && x >= -100 && x <= 100) ? undefined : "expected an object of token id → number from -100 to 100";

/**
 * Optional fields of both routes, checked when present and not null (OpenAI clients send null for
 * "unset"); ranges are OpenAI's (top_logprobs and completions logprobs: vLLM's default maximum 20).
 */
const OPTIONAL_FIELDS: Record<string, Check> = {
  temperature: numberIn(0, 2),
  top_p: numberIn(0, 1, true),
  presence_penalty: numberIn(-2, 2),
  frequency_penalty: numberIn(-2, 2),
  seed: integerIn(Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER),
  stop,
  user: string,
  logit_bias: logitBias,
  ignore_eos: bool,
};
const CHAT_FIELDS: Record<string, Check> = { ...OPTIONAL_FIELDS, logprobs: bool, top_logprobs: integerIn(0, 20), parallel_tool_calls: bool };
const COMPLETION_FIELDS: Record<string, Check> = { ...OPTIONAL_FIELDS, logprobs: integerIn(0, 20), echo: bool, suffix: string };

function common(b: Body, limits: RequestLimits, maxKeys: readonly string[], fields: Record<string, Check>): BadRequest | Omit<GenerationRequest, "prompt" | "messages"> {
  if (typeof b.model !== "string" || b.model.length === 0) return new BadRequest("model", `model: expected a non-empty string, got ${show(b.model)}`);
  let maxTokens = DEFAULT_MAX_TOKENS;
  for (const key of maxKeys) {
    const v = b[key];
    if (v === undefined || v === null) continue;
    if (typeof v !== "number" || !Number.isInteger(v) || v < 1 || v > limits.maxOutputTokens) {
      return new BadRequest(key, `${key}: expected an integer from 1 to ${limits.maxOutputTokens}, got ${show(v)}`);
    }
    maxTokens = v;
  }
  if (b.n !== undefined && b.n !== null && b.n !== 1) return new BadRequest("n", `n: only 1 is supported, got ${show(b.n)}`);
  if (b.stream !== undefined && b.stream !== null && typeof b.stream !== "boolean") return new BadRequest("stream", `stream: expected true or false, got ${show(b.stream)}`);
  let includeUsage = false;
  let continuousUsage = false;
  const so = b.stream_options;
  if (so !== undefined && so !== null) {
    if (typeof so !== "object" || Array.isArray(so)) return new BadRequest("stream_options", `stream_options: expected an object, got ${show(so)}`);
    const iu = (so as Body).include_usage;
    if (iu !== undefined && iu !== null && typeof iu !== "boolean") return new BadRequest("stream_options.include_usage", `stream_options.include_usage: expected true or false, got ${show(iu)}`);
    includeUsage = iu === true;
    const cu = (so as Body).continuous_usage_stats;
    if (cu !== undefined && cu !== null && typeof cu !== "boolean") return new BadRequest("stream_options.continuous_usage_stats", `stream_options.continuous_usage_stats: expected true or false, got ${show(cu)}`);
    continuousUsage = includeUsage && cu === true;
  }
  for (const key in fields) {
    const v = b[key];
    if (v === undefined || v === null) continue;
    const problem = fields[key]!(v);
    if (problem !== undefined) return new BadRequest(key, `${key}: ${problem}, got ${show(v)}`);
  }
  return { model: b.model, maxTokens, stream: b.stream === true, includeUsage, continuousUsage };
}

/** A 400 for prompt text over --max-prompt-bytes (counted without encoding, before any tokenizing). */
function promptTooLong(param: string, bytes: number, limits: RequestLimits): BadRequest | undefined {
  if (bytes <= limits.maxPromptBytes) return undefined;
  return new BadRequest(param, `${param}: ${bytes} bytes of prompt text exceed the limit of ${limits.maxPromptBytes} bytes (--max-prompt-bytes)`);
}

function asObject(body: unknown): Body | BadRequest {
  if (typeof body !== "object" || body === null || Array.isArray(body)) return new BadRequest("body", "body must be a JSON object");
  return body as Body;
}

/** The array as token ids (integers 0..MAX_TOKEN_ID), or a 400 naming the first that is not. */
export function tokenIds(v: readonly unknown[], param: string): number[] | BadRequest {
  for (let i = 0; i < v.length; i++) {
    const t = v[i];
    if (typeof t !== "number" || !Number.isInteger(t) || t < 0 || t > MAX_TOKEN_ID) return new BadRequest(param, `${param}[${i}]: expected a token id from 0 to ${MAX_TOKEN_ID}, got ${show(t)}`);
  }
  return v as number[];
}

/** POST /v1/completions. `prompt`: a string, a token-id array, or a one-element list of either. */
export function parseCompletionRequest(body: unknown, limits: RequestLimits): GenerationRequest | BadRequest {
  const b = asObject(body);
  if (b instanceof BadRequest) return b;
  const c = common(b, limits, ["max_tokens"], COMPLETION_FIELDS);
  if (c instanceof BadRequest) return c;
  let p = b.prompt;
  if (Array.isArray(p) && p.length === 1 && (typeof p[0] === "string" || Array.isArray(p[0]))) p = p[0];
  if (typeof p === "string") {
    if (p.length === 0) return new BadRequest("prompt", "prompt: must not be empty");
    const tooLong = promptTooLong("prompt", Buffer.byteLength(p, "utf8"), limits);
    if (tooLong) return tooLong;
    return { ...c, prompt: { kind: "text", text: p } };
  }
  if (Array.isArray(p)) {
    if (p.length === 0) return new BadRequest("prompt", "prompt: must not be empty");
    if (p.some((x) => typeof x === "string" || Array.isArray(x))) return new BadRequest("prompt", `prompt: a batch of ${p.length} prompts is not supported (send one prompt per request)`);
    const ids = tokenIds(p, "prompt");
    if (ids instanceof BadRequest) return ids;
    return { ...c, prompt: { kind: "tokens", ids } };
  }
  return new BadRequest("prompt", `prompt: expected a string or an array of token ids, got ${show(p)}`);
}

/** POST /v1/chat/completions. Content: a string or a list of `{"type": "text", "text"}` parts. */
export function parseChatRequest(body: unknown, limits: RequestLimits): GenerationRequest | BadRequest {
  const b = asObject(body);
  if (b instanceof BadRequest) return b;
  const c = common(b, limits, ["max_tokens", "max_completion_tokens"], CHAT_FIELDS);
  if (c instanceof BadRequest) return c;
  const ms = b.messages;
  if (!Array.isArray(ms) || ms.length === 0) return new BadRequest("messages", `messages: expected a non-empty array, got ${show(ms)}`);
  const messages: ChatMessage[] = [];
  let bytes = 0;
  for (let i = 0; i < ms.length; i++) {
    const m = ms[i] as Body;
    const at = `messages[${i}]`;
    if (typeof m !== "object" || m === null || Array.isArray(m)) return new BadRequest(at, `${at}: expected an object with role and content`);
    if (typeof m.role !== "string" || m.role.length === 0) return new BadRequest(`${at}.role`, `${at}.role: expected a non-empty string, got ${show(m.role)}`);
    let content: string;
    if (typeof m.content === "string") content = m.content;
    else if (m.content === null || m.content === undefined) content = "";
    else if (Array.isArray(m.content)) {
      const parts: string[] = [];
      for (let j = 0; j < m.content.length; j++) {
        const part = m.content[j] as Body;
        if (typeof part !== "object" || part === null || part.type !== "text" || typeof part.text !== "string") {
          return new BadRequest(`${at}.content[${j}]`, `${at}.content[${j}]: only {"type": "text", "text": "..."} parts are supported`);
        }
        parts.push(part.text);
      }
      content = parts.join("");
    } else return new BadRequest(`${at}.content`, `${at}.content: expected a string or a list of text parts, got ${show(m.content)}`);
    bytes += Buffer.byteLength(content, "utf8");
    const tooLong = promptTooLong("messages", bytes, limits);
    if (tooLong) return tooLong;
    messages.push({ role: m.role, content });
  }
  return { ...c, messages };
}

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  prompt_tokens_details: { cached_tokens: number };
}

export function usage(promptTokens: number, completionTokens: number, cachedTokens: number): Usage {
  return { prompt_tokens: promptTokens, completion_tokens: completionTokens, total_tokens: promptTokens + completionTokens, prompt_tokens_details: { cached_tokens: cachedTokens } };
}

export type FinishReason = "length" | "stop" | null;

export interface ResponseMeta {
  id: string;
  created: number;
  model: string;
}

export function completionBody(m: ResponseMeta, text: string, finish: FinishReason, u: Usage) {
  return { id: m.id, object: "text_completion", created: m.created, model: m.model, choices: [{ index: 0, text, logprobs: null, finish_reason: finish }], usage: u };
}

export function chatBody(m: ResponseMeta, text: string, finish: FinishReason, u: Usage) {
  return {
    id: m.id,
    object: "chat.completion",
    created: m.created,
    model: m.model,
    choices: [{ index: 0, message: { role: "assistant", content: text }, logprobs: null, finish_reason: finish }],
    usage: u,
  };
}

export function completionChunk(m: ResponseMeta, text: string, finish: FinishReason) {
  return { id: m.id, object: "text_completion", created: m.created, model: m.model, choices: [{ index: 0, text, logprobs: null, finish_reason: finish }] };
}

export function chatChunk(m: ResponseMeta, delta: { role?: "assistant"; content?: string }, finish: FinishReason) {
  return { id: m.id, object: "chat.completion.chunk", created: m.created, model: m.model, choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] };
}

/** The last chunk with `stream_options.include_usage`: no choices, the usage. */
export function usageChunk(m: ResponseMeta, object: "text_completion" | "chat.completion.chunk", u: Usage) {
  return { id: m.id, object, created: m.created, model: m.model, choices: [], usage: u };
}

export function sseData(value: unknown): string {
  return `data: ${JSON.stringify(value)}\n\n`;
}

export const SSE_DONE = "data: [DONE]\n\n";
