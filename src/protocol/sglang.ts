// What SGLang's server answers that the SGLang-family routers (sglang-router, vllm-router) read
// from a worker, and SGLang's native POST /generate, as pure shapes: the load report /get_load
// (an array per DP rank in SGLang's current form, `{"load": N}` in the older form vllm-router
// reads), /server_info and /model_info (what a router's worker registration parses), and
// /generate's request and answer. docs/worker-api.md shows each, captured from the routers.
import type { BootstrapInfo } from "./dynamo/bootstrap.ts";
import { BadRequest, tokenIds } from "./openai.ts";

/** `--get-load-format`: which /get_load a router reads. */
export const GET_LOAD_FORMATS = ["array", "object"] as const;
export type GetLoadFormat = (typeof GET_LOAD_FORMATS)[number];

export interface RankLoadReport {
  running: number;
  waiting: number;
  /** Tokens the rank's KV cache holds for its requests (SGLang's num_tokens). */
  kvTokens: number;
}

/** SGLang's /get_load: per rank, requests queued or running and the tokens they hold; the older form is the worker's requests in flight. */
export function getLoadBody(format: GetLoadFormat, ranks: readonly RankLoadReport[], inFlight: number): unknown {
  if (format === "object") return { load: inFlight };
  return ranks.map((r, dp_rank) => ({ dp_rank, num_reqs: r.running + r.waiting, num_waiting_reqs: r.waiting, num_tokens: r.kvTokens }));
}

export interface ServedModel {
  model: string;
  maxModelLen: number | undefined;
  blockSize: number;
  dpSize: number;
  /** Tokens of KV cache per rank (SGLang's max_total_num_tokens). */
  kvCapacityTokens: number;
  version: string;
}

/**
 * SGLang's /server_info (its server arguments and a few runtime facts): the fields routers parse.
 * No model_path or tokenizer_path: a router would load a tokenizer from them, from the Hugging Face
 * hub for a bare name; served_model_name is the model the router lists.
 */
export function serverInfoBody(m: ServedModel): Record<string, unknown> {
  return {
    served_model_name: m.model,
    is_embedding: false,
    dp_size: m.dpSize,
    tp_size: 1,
    page_size: m.blockSize,
    context_length: m.maxModelLen ?? null,
    max_total_num_tokens: m.kvCapacityTokens,
    version: m.version,
  };
}

/** SGLang's /model_info (without paths, as /server_info). */
export function modelInfoBody(modelType: string, architectures: readonly string[]): Record<string, unknown> {
  return {
    is_generation: true,
    preferred_sampling_params: null,
    weight_version: "default",
    has_image_understanding: false,
    has_audio_understanding: false,
    model_type: modelType,
    architectures,
  };
}

/** SGLang's default `sampling_params.max_new_tokens`. */
export const SGLANG_DEFAULT_MAX_NEW_TOKENS = 128;

export interface SglangGenerateRequest {
  prompt: { kind: "text"; text: string } | { kind: "tokens"; ids: number[] };
  maxNewTokens: number;
  stream: boolean;
  rid: string | undefined;
}

/**
 * POST /generate: `text` or `input_ids` (one prompt; a batch is refused by name), `sampling_params`
 * (max_new_tokens is the one that matters here; the others are accepted as SGLang takes them),
 * `stream`, `rid`. Fields a router adds (bootstrap_host, …) pass.
 */
export function parseSglangGenerate(body: unknown, limits: { maxOutputTokens: number; maxPromptBytes: number }): SglangGenerateRequest | BadRequest {
  if (typeof body !== "object" || body === null || Array.isArray(body)) return new BadRequest("body", "body must be a JSON object");
  const b = body as Record<string, unknown>;
  let prompt: SglangGenerateRequest["prompt"];
  if (b.text !== undefined && b.input_ids !== undefined) return new BadRequest("text", "give one of text and input_ids, not both");
  if (typeof b.text === "string") {
    if (b.text.length > limits.maxPromptBytes || Buffer.byteLength(b.text) > limits.maxPromptBytes) return new BadRequest("text", `text: longer than the limit of ${limits.maxPromptBytes} bytes (--max-prompt-bytes)`);
    prompt = { kind: "text", text: b.text };
  } else if (Array.isArray(b.input_ids)) {
    if (b.input_ids.some((x) => Array.isArray(x))) return batchRefused("input_ids");
    const ids = tokenIds(b.input_ids, "input_ids");
    if (ids instanceof BadRequest) return ids;
    prompt = { kind: "tokens", ids };
  } else if (Array.isArray(b.text)) {
    return batchRefused("text");
  } else if (b.text === undefined && b.input_ids === undefined) {
    return new BadRequest("text", "one of text (a string) or input_ids (token ids) is required");
  } else {
    return new BadRequest(b.text !== undefined ? "text" : "input_ids", b.text !== undefined ? "text: expected a string" : "input_ids: expected an array of token ids");
  }
  let maxNewTokens = SGLANG_DEFAULT_MAX_NEW_TOKENS;
  const sp = b.sampling_params;
  if (sp !== undefined && sp !== null) {
    if (typeof sp !== "object" || Array.isArray(sp)) return new BadRequest("sampling_params", "sampling_params: expected an object");
    const m = (sp as Record<string, unknown>).max_new_tokens;
    if (m !== undefined && m !== null) {
      if (typeof m !== "number" || !Number.isInteger(m) || m < 1) return new BadRequest("sampling_params.max_new_tokens", `sampling_params.max_new_tokens: expected an integer of at least 1, got ${JSON.stringify(m)}`);
      if (m > limits.maxOutputTokens) return new BadRequest("sampling_params.max_new_tokens", `sampling_params.max_new_tokens: ${m} exceeds this server's limit of ${limits.maxOutputTokens} (--max-tokens-limit)`);
      maxNewTokens = m;
    }
  }
  if (b.stream !== undefined && typeof b.stream !== "boolean") return new BadRequest("stream", "stream: expected true or false");
  if (b.rid !== undefined && b.rid !== null && typeof b.rid !== "string") return new BadRequest("rid", "rid: expected a string (one request id; batches are not served)");
  return { prompt, maxNewTokens, stream: b.stream === true, rid: typeof b.rid === "string" ? b.rid : undefined };
}

function batchRefused(field: string): BadRequest {
  return new BadRequest(field, `${field}: a batch of prompts is not served by this worker; send one prompt per request`);
}

export interface SglangMeta {
  id: string;
  promptTokens: number;
}

/** One /generate answer (or streamed chunk): the text and ids so far and meta_info; finish_reason null until the end. */
export function sglangGenerateBody(meta: SglangMeta, text: string, outputIds: readonly number[], end: { cachedTokens: number; e2eLatencyS: number } | undefined): Record<string, unknown> {
  return {
    text,
    output_ids: outputIds,
    meta_info: {
      id: meta.id,
      finish_reason: end ? { type: "length", length: outputIds.length } : null,
      prompt_tokens: meta.promptTokens,
      completion_tokens: outputIds.length,
      cached_tokens: end?.cachedTokens ?? 0,
      ...(end ? { e2e_latency: end.e2eLatencyS } : {}),
    },
  };
}

/**
 * SGLang's prefill/decode pairing, as sglang-router adds it to both legs of a request at the top
 * level: `bootstrap_host`, `bootstrap_port` (the prefill server's) and `bootstrap_room` (a random
 * u63, the same on both legs). Undefined when the request carries none; a batch's arrays are refused.
 * A room past 2^53 reads as the same double on both legs, so it still pairs them.
 */
export function sglangBootstrapOf(body: unknown): BootstrapInfo | BadRequest | undefined {
  const b = body as Record<string, unknown>;
  const { bootstrap_host: host, bootstrap_port: port, bootstrap_room: room } = b;
  if (host === undefined && port === undefined && room === undefined) return undefined;
  if (Array.isArray(host) || Array.isArray(port) || Array.isArray(room)) return new BadRequest("bootstrap_room", "bootstrap_host / bootstrap_port / bootstrap_room: a batch's pairing is not served; send one prompt per request");
  if (typeof host !== "string" || host === "") return new BadRequest("bootstrap_host", `bootstrap_host: expected the prefill server's host, got ${JSON.stringify(host)}`);
  if (!(typeof port === "number" && Number.isInteger(port) && port >= 1 && port <= 65535)) return new BadRequest("bootstrap_port", `bootstrap_port: expected a port from 1 to 65535, got ${JSON.stringify(port)}`);
  const r = typeof room === "number" && Number.isInteger(room) && room >= 0 ? BigInt(room) : typeof room === "string" && /^[0-9]{1,20}$/.test(room) ? BigInt(room) : undefined;
  if (r === undefined || r >= 1n << 64n) return new BadRequest("bootstrap_room", `bootstrap_room: expected a non-negative integer room id, got ${JSON.stringify(room)}`);
  return { host, port, room: r, handoffId: undefined };
}
