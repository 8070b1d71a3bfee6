// The frontend's HTTP surface as a pure app (tests call `app.fetch(new Request(...))`, no port):
// routes /v1/models, /v1/completions, /v1/chat/completions, /health, /live, /metrics, and maps
// every failure to OpenAI's error JSON and status (400, 404, 413, 503, 502, 504) inside the app.
import { applyChatTemplate, detokenizeOne, tokenize } from "../../core/text/tokenizer.ts";
import { concatBytes } from "../../lib/bytes.ts";
import { LOG_LEVELS, type Logger } from "../../lib/logger.ts";
import {
  BadRequest,
  chatBody,
  chatChunk,
  completionBody,
  completionChunk,
  openAiError,
  openAiErrorBody,
  parseChatRequest,
  parseCompletionRequest,
  SSE_DONE,
  sseData,
  usage,
  usageChunk,
  type GenerationRequest,
  type ResponseMeta,
} from "../../protocol/openai.ts";
import type { GenerateBody, GenerateLine } from "../../protocol/generate.ts";
import { PROMETHEUS_CONTENT_TYPE, renderMetrics, type MetricFamily } from "../../protocol/prometheus.ts";
import { pathOf } from "../../transport/http/path-of.ts";
import type { FrontendMetrics } from "./metrics.ts";
import { WorkerGone, type RoutePlan, type RoutingState } from "./routing-state.ts";
import { allLines, ClientGone, ndjsonLines, readAll, StallWatch, WorkerCancel, WorkerStalled, type WorkerReply, type WorkerTransport } from "./worker-call.ts";

export interface FrontendAppDeps {
  state: RoutingState;
  metrics: FrontendMetrics;
  logger: Logger;
  maxRequestBytes: number;
  maxOutputTokens: number;
  /** A worker that sends nothing for this long fails the request with 504. */
  stallTimeoutMs: number;
  callWorker: WorkerTransport;
  /** Monotonic ms. */
  now: () => number;
  /** Unix seconds for `created`. */
  wallSeconds: () => number;
  /** Counters of the event feeds for /metrics. */
  feedMetrics?: () => MetricFamily[];
  /** The discovery connection, shown on /health (not part of healthiness). */
  discoveryHealth?: () => unknown;
  /** Unique per process: request ids are `${idPrefix}-${n}`. */
  idPrefix: string;
}

export interface FrontendApp {
  fetch(req: Request): Promise<Response>;
}

type Kind = "completion" | "chat";

const ROUTES = "routes: GET /v1/models, POST /v1/completions, POST /v1/chat/completions, GET /health, /live, /metrics";
const ENCODER = new TextEncoder();
const DECODER = new TextDecoder();

export function createFrontendApp(deps: FrontendAppDeps): FrontendApp {
  const { state, metrics, logger } = deps;
  const stalls = new StallWatch(deps.stallTimeoutMs, deps.now);
  let seq = 0;

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
    metrics.request(KNOWN_ROUTES.has(path) ? path : "other", res.status);
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
        return Response.json({ object: "list", data: state.models().map((id) => ({ id, object: "model", created: 0, owned_by: "kvcr-mock" })) });
      case "/live":
        return Response.json({ status: "live" });
      case "/health": {
        const body = { status: state.workerCount > 0 ? "healthy" : "no workers", instances: state.workerCount, models: state.models(), ...(deps.discoveryHealth ? { discovery: deps.discoveryHealth() } : {}) };
        return Response.json(body, { status: state.workerCount > 0 ? 200 : 503 });
      }
      case "/metrics":
        return new Response(renderMetrics(metrics.families(state, deps.feedMetrics ?? (() => []))), { headers: { "content-type": PROMETHEUS_CONTENT_TYPE } });
      default:
        return openAiError(404, `no route ${req.method} ${path}; ${ROUTES}`, { code: "not_found" });
    }
  }

  async function generate(req: Request, kind: Kind, t0: number): Promise<Response> {
    const raw = await readBody(req, deps.maxRequestBytes);
    if (raw instanceof Response) return raw;
    let json: unknown;
    try {
      json = JSON.parse(raw);
    } catch (err) {
      return openAiError(400, `body is not valid JSON: ${(err as Error).message}`, { param: "body" });
    }
    const parsed = kind === "chat" ? parseChatRequest(json, deps) : parseCompletionRequest(json, deps);
    if (parsed instanceof BadRequest) return openAiError(400, parsed.message, { param: parsed.param });
    const tokens = promptTokens(parsed);
    if (tokens.length === 0) return openAiError(400, "prompt: tokenizes to no tokens", { param: kind === "chat" ? "messages" : "prompt" });
    const routed = state.routeOrHold(parsed.model, tokens, req.signal);
    const plan = routed instanceof Promise ? await routed : routed;
    if ("status" in plan) return openAiError(plan.status, plan.message, { code: plan.code, param: plan.status === 404 ? "model" : undefined });
    metrics.decision.observe(plan.decisionMs / 1000);
    if (plan.kvHint) metrics.hintsAttached++;
    const d = plan.decision;
    // Built only when debug is on: this line is on every request's path.
    if (logger.level >= LOG_LEVELS.debug) logger.debug(
      `route ${parsed.model}: worker ${plan.worker.id} rank ${plan.dpRank} cost ${d.cost.toFixed(3)} = prefill ${d.prefillBlocks.toFixed(3)} + active ${d.activeBlocks} + new ${d.newBlocks} block(s) (isl ${plan.promptTokens}, outstanding prefill ${d.activePrefillTokens} tokens; overlap device ${d.deviceOverlap} host ${d.hostOverlap} disk ${d.diskOverlap}); index ${state.index.size("device")} device / ${state.index.size("host")} host block(s)${plan.kvHint ? "; kv_hint attached" : ""}`,
    );
    return await proxy(req, kind, parsed, tokens, plan, t0);
  }

  async function proxy(req: Request, kind: Kind, r: GenerationRequest, tokens: number[], plan: RoutePlan, t0: number): Promise<Response> {
    const ctrl = new WorkerCancel();
    const worker = plan.worker;
    worker.inflight.add(ctrl);
    const stall = stalls.watch(ctrl, worker.id);
    let finished = false;
    const finish = () => {
      if (finished) return;
      finished = true;
      stall.stop();
      worker.inflight.delete(ctrl);
      state.finish(plan);
      metrics.latency.observe((deps.now() - t0) / 1000);
    };
    const onClientAbort = () => ctrl.abort(new ClientGone());
    req.signal.addEventListener("abort", onClientAbort, { once: true });
    const requestId = `${deps.idPrefix}-${++seq}`;
    const body: GenerateBody = { worker: worker.record.worker_index, dp_rank: plan.dpRank, token_ids: tokens, max_tokens: r.maxTokens, request_id: requestId };
    if (plan.kvHint) body.kv_hint = plan.kvHint;
    const meta: ResponseMeta = { id: `${kind === "chat" ? "chatcmpl" : "cmpl"}-${requestId}`, created: Math.floor(deps.wallSeconds()), model: r.model };

    let res: WorkerReply;
    try {
      res = await deps.callWorker(worker.record.request_url, JSON.stringify(body), ctrl, stall);
    } catch (err) {
      finish();
      return failure(ctrl, err, worker.id);
    }
    if (res.status !== 200) {
      const text = await readAll(res).then((b) => DECODER.decode(b), () => "");
      finish();
      // The worker refused the request itself (e.g. it can never fit its KV cache): the client's to fix.
      if (res.status === 400) return openAiError(400, `worker ${worker.id} refused the request: ${workerMessage(text)}`, { code: "worker_refused" });
      return openAiError(502, `worker ${worker.id} answered ${res.status}: ${text.slice(0, 300)}`, { code: "worker_failed" });
    }
    // Which (worker, rank) served it: `kvcr-mock bench` counts its per_worker spread from these.
    const servedBy = { "x-kvcr-worker": worker.id, "x-kvcr-dp-rank": String(plan.dpRank) };
    const firstToken = () => {
      state.firstToken(plan);
      metrics.ttft.observe((deps.now() - t0) / 1000);
    };

    if (!r.stream) {
      const ids: number[] = [];
      let summary: GenerateLine | undefined;
      try {
        // TTFT of a non-streaming request is its time to the whole answer: no token reaches the client earlier.
        // The router's view of the worker's prefill ends with the first body chunk (it carries the first token).
        for (const line of await allLines(res, () => state.firstToken(plan))) {
          if ("token_id" in line) {
            if (ids.length === 0) firstToken();
            ids.push(line.token_id);
          } else summary = line;
        }
      } catch (err) {
        finish();
        return failure(ctrl, err, worker.id);
      }
      finish();
      if (!summary || !("finish_reason" in summary) || summary.finish_reason !== "length") {
        return openAiError(502, `worker ${worker.id} ended the request without finishing it (${summary && "finish_reason" in summary ? summary.finish_reason : "no summary"})`, { code: "worker_failed" });
      }
      let text = "";
      for (const id of ids) text += detokenizeOne(id);
      const u = usage(summary.prompt_tokens, summary.completion_tokens, summary.cached_tokens);
      return Response.json(kind === "chat" ? chatBody(meta, text, "length", u) : completionBody(meta, text, "length", u), { headers: servedBy });
    }

    // Streaming: SSE chunks as tokens arrive; a client that goes away cancels the worker request.
    const lines = ndjsonLines(res);
    let first = true;
    const stream = new ReadableStream<Uint8Array>({
      async pull(controller) {
        let next: IteratorResult<GenerateLine>;
        try {
          next = await lines.next();
        } catch (err) {
          finish();
          if (!(ctrl.reason instanceof ClientGone)) {
            const res = failure(ctrl, err, worker.id);
            controller.enqueue(ENCODER.encode(sseData(await res.json())));
          }
          controller.close();
          return;
        }
        if (next.done) {
          finish();
          controller.close();
          return;
        }
        const line = next.value;
        if ("token_id" in line) {
          if (first) firstToken();
          const text = detokenizeOne(line.token_id);
          const chunk = kind === "chat" ? chatChunk(meta, first ? { role: "assistant", content: text } : { content: text }, null) : completionChunk(meta, text, null);
          first = false;
          controller.enqueue(ENCODER.encode(sseData(chunk)));
          return;
        }
        finish();
        if (line.finish_reason !== "length") {
          controller.enqueue(ENCODER.encode(sseData(openAiErrorBody(502, `worker ${worker.id} cancelled the request`, { code: "worker_failed" }))));
          controller.close();
          return;
        }
        let out = sseData(kind === "chat" ? chatChunk(meta, {}, "length") : completionChunk(meta, "", "length"));
        if (r.includeUsage) out += sseData(usageChunk(meta, kind === "chat" ? "chat.completion.chunk" : "text_completion", usage(line.prompt_tokens, line.completion_tokens, line.cached_tokens)));
        controller.enqueue(ENCODER.encode(out + SSE_DONE));
        controller.close();
      },
      cancel() {
        ctrl.abort(new ClientGone());
        res.cancel();
        finish();
      },
    });
    return new Response(stream, { headers: { "content-type": "text/event-stream", "cache-control": "no-cache", ...servedBy } });
  }

  function failure(ctrl: WorkerCancel, err: unknown, workerId: string): Response {
    const reason = ctrl.aborted ? ctrl.reason : err;
    if (reason instanceof WorkerStalled) return openAiError(504, reason.message, { code: "worker_timeout" });
    if (reason instanceof WorkerGone) return openAiError(502, reason.message, { code: "worker_gone" });
    if (reason instanceof ClientGone) return openAiError(499, reason.message);
    return openAiError(502, `worker ${workerId} failed: ${reason instanceof Error ? reason.message : String(reason)}`, { code: "worker_failed" });
  }

  return { fetch };
}

function workerMessage(text: string): string {
  try {
    const m = (JSON.parse(text) as { error?: { message?: unknown } }).error?.message;
    if (typeof m === "string") return m;
  } catch {
    // not JSON: the raw text below
  }
  return text.slice(0, 300);
}

function promptTokens(r: GenerationRequest): number[] {
  if (r.messages) return tokenize(applyChatTemplate(r.messages));
  const p = r.prompt!;
  return p.kind === "tokens" ? p.ids : tokenize(p.text);
}

const KNOWN_ROUTES: ReadonlySet<string> = new Set(["/v1/completions", "/v1/chat/completions", "/v1/models", "/health", "/live", "/metrics"]);

const tooLarge = (n: string, max: number) => openAiError(413, `request body of ${n} bytes exceeds the limit of ${max} bytes (--max-request-bytes)`, { code: "request_too_large" });

/**
 * The body as text, or a 413 when it exceeds `max` bytes (read with a cap, never fully buffered).
 * Not async itself: the common case (a declared length within the limit) is Bun's own one read.
 */
function readBody(req: Request, max: number): string | Response | Promise<string | Response> {
  const length = req.headers.get("content-length");
  const declared = Number(length ?? NaN);
  if (declared > max) return tooLarge(String(declared), max);
  // A declared length within the limit: one read (Bun holds no more than it declared).
  if (length !== null && declared >= 0) return req.text();
  return readCapped(req, max);
}

async function readCapped(req: Request, max: number): Promise<string | Response> {
  if (!req.body) return "";
  const reader = req.body.getReader();
  const parts: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    size += value.length;
    if (size > max) {
      void reader.cancel().catch(() => {});
      return tooLarge(`more than ${max}`, max);
    }
    parts.push(value);
  }
  return new TextDecoder().decode(parts.length === 1 ? parts[0] : concatBytes(parts, size));
}
