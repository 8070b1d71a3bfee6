// The frontend's HTTP surface as a pure app (tests call `app.fetch(new Request(...))`, no port):
// the route table (/v1/models[/{id}], /v1/completions, /v1/chat/completions, /tokenize, /detokenize,
// /v1/index, /health, /ping, /live, /metrics, /version) and a generate request's admission (body cap
// 413, body deadline 408, parse 400, route 404/503/529); proxy.ts calls the worker, vllm-routes.ts
// answers the model card and tokenizer routes.
import type { DiscoveryHealth } from "../../discovery/status.ts";
import { LOG_LEVELS, type Logger } from "../../lib/logger.ts";
import { CONTEXT_LENGTH_EXCEEDED, contextLengthProblem } from "../../protocol/context-length.ts";
import { BadRequest, openAiError, parseChatRequest, parseCompletionRequest } from "../../protocol/openai.ts";
import { PROMETHEUS_CONTENT_TYPE, renderMetrics, type MetricFamily } from "../../protocol/prometheus.ts";
import { onClientGone } from "../../transport/http/server-request.ts";
import { pathOf } from "../../transport/http/path-of.ts";
import { promptTokens, readJsonBody } from "../shared/serving/openai-body.ts";
import { VERSION_PATH, versionResponse } from "../shared/serving/version.ts";
import { detokenizeAnswer, modelList, modelRoute, MODELS_PREFIX, tokenizeAnswer } from "../shared/serving/vllm-routes.ts";
import type { Kind } from "./openai-reply.ts";
import type { AgentFeedHealth } from "./agent-feed.ts";
import { healthResponse } from "./health.ts";
import type { ReplicaSyncHealth } from "./replica-sync.ts";
import { indexResidency } from "./index-residency.ts";
import { createProxy, type ProxyDeps } from "./proxy.ts";
import type { IslBounding } from "../../core/routing/conditional-disagg.ts";
import { PrefillRouter } from "./disagg/prefill-router.ts";
import { errorTypeOf, type RequestTrack } from "./dynamo-metrics.ts";

export interface FrontendAppDeps extends ProxyDeps {
  logger: Logger;
  maxRequestBytes: number;
  maxOutputTokens: number;
  /** Largest prompt text in UTF-8 bytes, refused (400) before tokenizing. */
  maxPromptBytes: number;
  /** A body not fully arrived within this many ms gets 408 and its connection closed. */
  bodyTimeoutMs: number;
  /** Counters of the event feeds for /metrics. */
  feedMetrics?: () => MetricFamily[];
  /** Text → prompt tokens (--tokenizer); kvcr-mock's own tokenizer when absent. */
  tokenize?: (text: string) => number[];
  /** The discovery connection, shown on /health (degraded discovery makes the frontend degraded). */
  discoveryHealth?: () => DiscoveryHealth;
  /** The agents' re-sync state, shown on /health (degraded while one re-syncs or has a degraded slot). */
  agentHealth?: () => AgentFeedHealth;
  /** Router replica sync's NATS link and peers, shown on /health (degraded while NATS is unreachable). */
  replicaSyncHealth?: () => ReplicaSyncHealth;
  /** --strict-health: /health answers 503 while degraded. */
  strictHealth?: boolean;
  /** The router-event cursor a worker's indexed state reflects, where its feed has one (`GET /v1/index`). */
  indexCursor?: (workerId: string) => number | undefined;
  /** --router-conditional-disagg's isl_bounding thresholds (undefined: off). */
  islBounding?: IslBounding;
}

export interface FrontendApp {
  fetch(req: Request): Promise<Response>;
  /** Stops the app's timers (health probes of ejected workers). */
  close?(): void;
}

const ROUTES = "routes: GET /v1/models, /v1/models/{id}, POST /v1/completions, /v1/chat/completions, /tokenize, /detokenize, GET /v1/index, /health, /live, /metrics, /version, GET or POST /ping";

export function createFrontendApp(deps: FrontendAppDeps): FrontendApp {
  const { state, metrics, logger } = deps;
  const proxy = createProxy(deps);
  // Disaggregated serving: on for a model while prefill workers for it are in discovery.
  const prefill = new PrefillRouter({ ...deps, retries: deps.failures?.retries ?? 2 });

  const fetch = async (req: Request): Promise<Response> => {
    const path = pathOf(req.url, KNOWN_ROUTES);
    const t0 = deps.now();
    let res: Response;
    try {
      res = await route(req, path, t0);
    } catch (err) {
      logger.error(`${req.method} ${path}: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
      res = openAiError(500, `internal error: ${(err as Error).message}`);
    }
    metrics.request(KNOWN_ROUTES.has(path) ? path : isModelPath(path) ? `${MODELS_PREFIX}{id}` : "other", res.status);
    return res;
  };

  // Not async: the generate path hands back its own promise (no extra promise per request here).
  function route(req: Request, path: string, t0: number): Response | Promise<Response> {
    switch (path) {
      case "/v1/completions":
      case "/v1/chat/completions":
        if (req.method !== "POST") return openAiError(405, `use POST for ${path}`);
        return generate(req, path === "/v1/chat/completions" ? "chat" : "completion", t0);
      case "/v1/models":
        if (req.method !== "GET") return openAiError(405, `use GET for ${path}`);
        return Response.json(modelList(state));
      case "/tokenize":
      case "/detokenize":
        if (req.method !== "POST") return openAiError(405, `use POST for ${path}`);
        return tokenizer(req, path);
      case "/v1/index":
        if (req.method !== "GET") return openAiError(405, `use GET for ${path}`);
        return Response.json(indexResidency(state, deps.indexCursor));
      case "/live":
        return Response.json({ status: "live" });
      case "/health":
        return health();
      case "/ping":
        // vLLM's /ping (SageMaker's probe, GET or POST) answers as /health does, with an empty body.
        if (req.method !== "GET" && req.method !== "POST") return openAiError(405, "use GET or POST for /ping");
        return new Response(null, { status: health().status });
      case VERSION_PATH:
        return versionResponse(req.method);
      case "/metrics":
        return new Response(renderMetrics(metrics.families(state, deps.feedMetrics ?? (() => []))), { headers: { "content-type": PROMETHEUS_CONTENT_TYPE } });
      default:
        if (isModelPath(path)) return req.method === "GET" ? modelRoute(state, path.slice(MODELS_PREFIX.length)) : openAiError(405, `use GET for ${MODELS_PREFIX}{id}`);
        return openAiError(404, `no route ${req.method} ${path}; ${ROUTES}`, { code: "not_found" });
    }
  }

  function health(): Response {
    return healthResponse({ workerCount: state.workerCount, ejected: state.health.ejectedCount, models: state.models(), agents: deps.agentHealth?.(), discovery: deps.discoveryHealth?.(), replicaSync: deps.replicaSyncHealth?.(), strict: deps.strictHealth ?? false });
  }

  const readJson = (req: Request) => readJsonBody(req, deps, logger, pathOf(req.url, KNOWN_ROUTES));

  /** POST /tokenize and /detokenize: the same body caps as generation, then vllm-routes.ts. */
  async function tokenizer(req: Request, path: string): Promise<Response> {
    const body = await readJson(req);
    if (body instanceof Response) return body;
    return path === "/tokenize" ? tokenizeAnswer(body.json, state, deps, deps.tokenize) : detokenizeAnswer(body.json, state);
  }

  async function generate(req: Request, kind: Kind, t0: number): Promise<Response> {
    const body = await readJson(req);
    if (body instanceof Response) return body;
    const json = body.json;
    const parsed = kind === "chat" ? parseChatRequest(json, deps) : parseCompletionRequest(json, deps);
    if (parsed instanceof BadRequest) return openAiError(400, parsed.message, { param: parsed.param });
    // Dynamo's request accounting starts once the model is known and ends with the response.
    const track = metrics.dynamo.begin(parsed.model, kind === "chat" ? "chat_completions" : "completions", parsed.stream);
    const tokens = promptTokens(parsed, deps.tokenize);
    if (tokens.length === 0) return refused(track, 400, "prompt: tokenizes to no tokens", { param: kind === "chat" ? "messages" : "prompt" });
    // vLLM's rule, before routing: prompt + max_tokens above the model's context is the client's to fix.
    const tooLong = contextLengthProblem(state.maxModelLen(parsed.model), tokens.length, parsed.maxTokens);
    if (tooLong !== undefined) return refused(track, 400, tooLong, { code: CONTEXT_LENGTH_EXCEEDED, param: kind === "chat" ? "messages" : "prompt" });
    const routed = prefill.active(parsed.model) ? prefill.route(parsed.model, tokens, req.signal) : state.routeOrHold(parsed.model, tokens, (gone) => onClientGone(req, gone));
    const got = routed instanceof Promise ? await routed : routed;
    const { plan, leg } = "plan" in got ? got : { plan: got, leg: undefined };
    if ("status" in plan) return refused(track, plan.status, plan.message, { code: plan.code, param: plan.status === 404 ? "model" : undefined });
    metrics.decision.observe(plan.decisionMs / 1000);
    if (plan.kvHint) metrics.hintsAttached++;
    metrics.dynamo.routed(plan.decisionMs);
    metrics.routedTo(plan.worker.id, plan.dpRank);
    const d = plan.decision;
    // Built only when debug is on: this line is on every request's path.
    if (logger.level >= LOG_LEVELS.debug) logger.debug(
      `route ${parsed.model}: worker ${plan.worker.id} rank ${plan.dpRank} cost ${d.cost.toFixed(3)} = prefill ${d.prefillBlocks.toFixed(3)} + active ${d.activeBlocks} + new ${d.newBlocks} block(s) (isl ${plan.promptTokens}, outstanding prefill ${d.activePrefillTokens} tokens; overlap device ${d.deviceOverlap} host ${d.hostOverlap} disk ${d.diskOverlap}); index ${state.index.size("device")} device / ${state.index.size("host")} host block(s)${plan.kvHint ? "; kv_hint attached" : ""}`,
    );
    return await proxy(req, { kind, request: parsed, tokens, plan, t0, track, leg });
  }

  return { fetch, close: () => proxy.close() };
}

/** An error answer to a parsed request, counted as Dynamo counts it. */
function refused(track: RequestTrack, ...error: Parameters<typeof openAiError>): Response {
  track.end(errorTypeOf(error[0]));
  return openAiError(...error);
}


const KNOWN_ROUTES: ReadonlySet<string> = new Set(["/v1/completions", "/v1/chat/completions", "/v1/models", "/v1/index", "/health", "/live", "/metrics", "/tokenize", "/detokenize", "/ping", VERSION_PATH]);

const isModelPath = (path: string) => path.startsWith(MODELS_PREFIX) && path.length > MODELS_PREFIX.length;
