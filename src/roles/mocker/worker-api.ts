// One worker's own vLLM OpenAI server (mocker --openai-port-base / --openai-ports), as a pure app:
// completions and chat completions (streamed or not) through the same engine path as /v1/generate
// (generation.ts: same KV events, metrics, truth and faults), its rank pinned by
// X-data-parallel-rank or chosen by vLLM's DP balancer (dp-balance.ts); /v1/models, /tokenize,
// /detokenize, /health, /ping, /version, /metrics (this worker's vLLM series only), /load,
// /reset_prefix_cache and vLLM's LoRA routes (/v1/load_lora_adapter, /v1/unload_lora_adapter; a
// request's model names the base model or an adapter); and what SGLang's server answers that the
// SGLang-family routers call (/get_load, /server_info, /model_info and their /get_* spellings,
// /health_generate, /flush_cache, native /generate: sglang-routes.ts). Request checks, error bodies
// and SSE are the frontend's (roles/openai-*.ts).
import { CONTEXT_LENGTH_EXCEEDED, contextLengthProblem } from "../../protocol/context-length.ts";
import type { GenerateRequest, GenerateSummary } from "../../protocol/generate.ts";
import { parseKvTransferParams, type KvTransferParams } from "../../protocol/kv-transfer-params.ts";
import { BadRequest, openAiError, openAiErrorBody, parseChatRequest, parseCompletionRequest, type ResponseMeta } from "../../protocol/openai.ts";
import { PROMETHEUS_CONTENT_TYPE, renderMetrics, type MetricFamily } from "../../protocol/prometheus.ts";
import { pathOf } from "../../transport/http/path-of.ts";
import { SSE_HEADERS, SseAnswer, wholeAnswerBody, type Kind } from "../shared/serving/openai-answer.ts";
import { promptTokens, readJsonBody } from "../shared/serving/openai-body.ts";
import { VERSION_PATH, versionResponse } from "../shared/serving/version.ts";
import { detokenizeAnswer, modelList, modelNotFound, modelRoute, MODELS_PREFIX, tokenizeAnswer, type ModelView } from "../shared/serving/vllm-routes.ts";
import { balancedRank, DP_RANK_HEADER, requestedRank } from "./dp-balance.ts";
import { runGeneration, SSE_HEARTBEAT, STOPPING, streamedOutput, wholeOutput, withHeaders } from "./generation.ts";
import { createSglangRoutes, SGLANG_ROUTES, type SglangEngines, type SglangRouteOptions } from "./sglang-routes.ts";
import { sglangBootstrapOf } from "../../protocol/sglang.ts";
import type { BootstrapInfo } from "../../protocol/dynamo/bootstrap.ts";
import { adapterErrorResponse, type LoraAdapters } from "./lora-adapters.ts";
import type { TextFormat } from "./token-stream.ts";

/** What one worker's API needs of the process's engines (MockerWorkerPool). */
export interface WorkerApiEngines extends SglangEngines {
  workerId(worker: number): string;
  workerMetrics(worker: number): MetricFamily[];
  /** The process's LoRA adapters, when it has its table (the mocker always does). */
  readonly lora?: { readonly adapters: LoraAdapters };
}

export interface WorkerApiOptions extends SglangRouteOptions {
  /** Unix seconds for `created`. */
  wallSeconds: () => number;
  /** Aborted once the process is closing: /health answers 503. */
  closing?: AbortSignal;
  /** The process's LoRA adapters: served as models, loaded and unloaded at run time (always on here). */
  lora?: LoraAdapters;
}

const ROUTE_LIST =
  "routes: POST /v1/completions, /v1/chat/completions, /generate, /tokenize, /detokenize, /reset_prefix_cache, /flush_cache, /v1/load_lora_adapter, /v1/unload_lora_adapter; GET /v1/models, /v1/models/{id}, /health, /health_generate, /load, /get_load, /server_info, /get_server_info, /model_info, /get_model_info, /metrics, /version; GET or POST /ping";
const ROUTES: ReadonlySet<string> = new Set(["/v1/completions", "/v1/chat/completions", "/v1/models", "/tokenize", "/detokenize", "/health", "/ping", "/metrics", "/load", "/reset_prefix_cache", "/v1/load_lora_adapter", "/v1/unload_lora_adapter", VERSION_PATH, ...SGLANG_ROUTES]);

export function createWorkerApiFetch(engines: WorkerApiEngines, o: WorkerApiOptions): (req: Request) => Promise<Response> {
  const { worker } = o;
  const workerId = engines.workerId(worker);
  const lora = o.lora;
  // vLLM's model list: the base model, then each adapter with `parent` the base model and `root` its path.
  const models: ModelView = {
    models: () => [o.modelName, ...(lora?.names(worker) ?? [])],
    maxModelLen: () => o.maxModelLen,
    parentOf: (id) => (id !== o.modelName && lora?.has(worker, id) ? o.modelName : undefined),
    rootOf: (id) => (id !== o.modelName ? lora?.get(worker, id)?.path : undefined),
  };
  let seq = 0;

  const health = () => new Response(null, { status: o.closing?.aborted ? 503 : 200 });
  /** The rank the request pins (vLLM's header, else SGLang's body field), or vLLM's DP balancer's pick. */
  const rankOf = (req: Request, json: unknown): number | Response => {
    const loads = engines.rankLoads(worker);
    const pinned = requestedRank(req.headers.get(DP_RANK_HEADER), json, loads.length);
    if (typeof pinned === "object") return openAiError(400, pinned.problem, pinned.param ? { param: pinned.param } : {});
    return pinned ?? balancedRank(loads);
  };
  const sglang = createSglangRoutes({ engines, o, workerId, health, nextSeq: () => ++seq, rankOf, disaggLegOf });

  async function generate(req: Request, kind: Kind, path: string): Promise<Response> {
    const body = await readJsonBody(req, o.limits, o.logger, path);
    if (body instanceof Response) return body;
    const parsed = kind === "chat" ? parseChatRequest(body.json, o.limits) : parseCompletionRequest(body.json, o.limits);
    if (parsed instanceof BadRequest) return openAiError(400, parsed.message, { param: parsed.param });
    const loraName = parsed.model === o.modelName ? undefined : parsed.model;
    if (loraName !== undefined && !lora?.has(worker, loraName)) return modelNotFound(parsed.model);
    const param = kind === "chat" ? "messages" : "prompt";
    const tokens = promptTokens(parsed);
    if (tokens.length === 0) return openAiError(400, "prompt: tokenizes to no tokens", { param });
    const tooLong = contextLengthProblem(o.maxModelLen, tokens.length, parsed.maxTokens);
    if (tooLong !== undefined) return openAiError(400, tooLong, { code: CONTEXT_LENGTH_EXCEEDED, param });
    const dpRank = rankOf(req, body.json);
    if (dpRank instanceof Response) return dpRank;
    const transfer = disaggLegOf(body.json);
    if (transfer instanceof Response) return transfer;
    const g: GenerateRequest = { worker, dpRank, tokenIds: tokens, maxTokens: parsed.maxTokens, ...transfer, ...(loraName !== undefined ? { loraName } : {}) };
    const meta: ResponseMeta = { id: `${kind === "chat" ? "chatcmpl" : "cmpl"}-${req.headers.get("x-request-id") ?? `${workerId}-${++seq}`}`, created: Math.floor(o.wallSeconds()), model: parsed.model };
    const servedBy = { "x-kvcr-worker": workerId, "x-kvcr-dp-rank": String(dpRank) };
    const output = parsed.stream
      ? streamedOutput(SSE_HEADERS, sseFormat(new SseAnswer(kind, meta, { includeUsage: parsed.includeUsage, continuousUsage: parsed.continuousUsage, promptTokens: tokens.length })))
      : wholeOutput(({ ids, summary }, headers) =>
          summary.finish_reason === "length" ? Response.json(withTransferParams(wholeAnswerBody(kind, meta, ids, summary), summary), { headers }) : withHeaders(openAiError(503, STOPPING), headers),
        );
    return runGeneration(req, g, engines, o.faults, output, servedBy);
  }

  async function tokenizer(req: Request, path: string): Promise<Response> {
    const body = await readJsonBody(req, o.limits, o.logger, path);
    if (body instanceof Response) return body;
    return path === "/tokenize" ? tokenizeAnswer(body.json, models, o.limits) : detokenizeAnswer(body.json, models);
  }

  /** vLLM's /v1/load_lora_adapter and /v1/unload_lora_adapter: 200 with its text, or its error body. */
  async function adapterRoute(req: Request, path: string): Promise<Response> {
    const body = await readJsonBody(req, o.limits, o.logger, path);
    if (body instanceof Response) return body;
    const json = body.json;
    if (typeof json !== "object" || json === null || Array.isArray(json)) return openAiError(400, "body must be a JSON object", { param: "body" });
    if (lora === undefined) return openAiError(503, "this worker has no LoRA adapter table");
    const b = json as Record<string, unknown>;
    const answer = path === "/v1/load_lora_adapter" ? lora.load(worker, b.lora_name, b.lora_path, o.modelName) : lora.unload(worker, b.lora_name);
    if (!answer.ok) return adapterErrorResponse(answer);
    o.logger.info(`worker ${workerId}: ${answer.text}`);
    return new Response(answer.text, { headers: { "content-type": "text/plain; charset=utf-8" } });
  }

  async function resetPrefixCache(): Promise<Response> {
    const refused = await engines.resetPrefixCache(worker);
    if (refused.length === 0) return new Response(null, { status: 200 });
    const ranks = refused.map((r) => `rank ${r.rank} (${r.running} running)`).join(", ");
    return openAiError(409, `worker ${workerId}: the prefix cache of ${ranks} was not reset: running requests hold its blocks (vLLM's engine refuses a reset then); the other ranks were reset; retry once idle`, { code: "requests_running" });
  }

  return async (req) => {
    const path = pathOf(req.url, ROUTES);
    const method = req.method;
    const only = (m: string) => openAiError(405, `use ${m} for ${path}`);
    switch (path) {
      case "/v1/completions":
      case "/v1/chat/completions":
        return method === "POST" ? generate(req, path === "/v1/chat/completions" ? "chat" : "completion", path) : only("POST");
      case "/v1/models":
        return method === "GET" ? Response.json(modelList(models)) : only("GET");
      case "/tokenize":
      case "/detokenize":
        return method === "POST" ? tokenizer(req, path) : only("POST");
      case "/health":
        return method === "GET" ? health() : only("GET");
      case "/ping":
        // vLLM's /ping (SageMaker's probe) answers as /health does.
        return method === "GET" || method === "POST" ? health() : only("GET or POST");
      case VERSION_PATH:
        return versionResponse(method);
      case "/metrics":
        return method === "GET" ? new Response(renderMetrics(engines.workerMetrics(worker)), { headers: { "content-type": PROMETHEUS_CONTENT_TYPE } }) : only("GET");
      case "/load":
        // vLLM's server_load: this worker's requests in flight.
        return method === "GET" ? Response.json({ server_load: engines.workerLoad(worker) }) : only("GET");
      case "/reset_prefix_cache":
        return method === "POST" ? resetPrefixCache() : only("POST");
      case "/v1/load_lora_adapter":
      case "/v1/unload_lora_adapter":
        return method === "POST" ? adapterRoute(req, path) : only("POST");
      case "/get_load":
      case "/server_info":
      case "/get_server_info":
      case "/model_info":
      case "/get_model_info":
      case "/health_generate":
      case "/flush_cache":
      case "/generate":
        return sglang(req, path);
      default:
        if (path.startsWith(MODELS_PREFIX) && path.length > MODELS_PREFIX.length) return method === "GET" ? modelRoute(models, path.slice(MODELS_PREFIX.length)) : only("GET");
        return openAiError(404, `no route ${method} ${path} on worker ${workerId}'s API; ${ROUTE_LIST}`, { code: "not_found" });
    }
  };
}

/**
 * A disaggregated leg's fields, checked here (the request parsers pass fields they do not know):
 * vLLM's kv_transfer_params (vllm-router's two stages), or SGLang's bootstrap_host / bootstrap_port /
 * bootstrap_room (sglang-router's legs sent at once); one request is one or the other.
 */
export function disaggLegOf(json: unknown): { kvTransferParams?: KvTransferParams; bootstrap?: BootstrapInfo } | Response {
  const raw = (json as Record<string, unknown>).kv_transfer_params;
  const bootstrap = sglangBootstrapOf(json);
  if (bootstrap instanceof BadRequest) return openAiError(400, bootstrap.message, { param: bootstrap.param });
  if (bootstrap !== undefined && raw !== undefined && raw !== null) return openAiError(400, "kv_transfer_params and bootstrap_room: a request is one disaggregated leg, vLLM's (kv_transfer_params) or SGLang's (bootstrap_room), not both", { param: "kv_transfer_params" });
  if (bootstrap !== undefined) return { bootstrap };
  if (raw === undefined || raw === null) return {};
  const p = parseKvTransferParams(raw);
  return p.ok ? { kvTransferParams: p.value } : openAiError(400, p.problem, { param: p.field });
}

/** A prefill worker's reply params go on the response body, where vLLM puts them. */
function withTransferParams<T extends object>(body: T, summary: GenerateSummary): T {
  return summary.kv_transfer_params ? { ...body, kv_transfer_params: summary.kv_transfer_params } : body;
}

/** The SSE body as the engine writes it: chunks per token batch, then the end (or the stopping error). */
function sseFormat(answer: SseAnswer): TextFormat {
  return {
    tokens: (ids) => answer.tokenEvents(ids),
    finish: (s) => (s.finish_reason === "length" ? answer.finishEvents(s) : answer.errorEvent(openAiErrorBody(503, STOPPING))),
    heartbeat: SSE_HEARTBEAT,
  };
}
