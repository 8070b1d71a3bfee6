// The routes of SGLang's server that the SGLang-family routers (sglang-router, vllm-router) call on
// a worker, served by each worker's API beside vLLM's: /get_load (polled for power_of_two and the
// load monitor), /server_info and /model_info with their older /get_* spellings (read at worker
// registration: the model a router then lists), /health_generate, POST /flush_cache (fanned out
// by the routers: the prefix cache is cleared, as /reset_prefix_cache clears it, and
// AllBlocksCleared published) and the native POST /generate (through the same engine path as the
// OpenAI routes). Shapes: protocol/sglang.ts.
import { CONTEXT_LENGTH_EXCEEDED, contextLengthProblem } from "../../protocol/context-length.ts";
import type { GenerateRequest } from "../../protocol/generate.ts";
import { BadRequest, openAiError, openAiErrorBody, SSE_DONE, sseData } from "../../protocol/openai.ts";
import { getLoadBody, modelInfoBody, parseSglangGenerate, serverInfoBody, sglangGenerateBody, type ServedModel } from "../../protocol/sglang.ts";
import { detokenize, tokenize } from "../../core/text/tokenizer.ts";
import { ARCHITECTURES, MODEL_TYPE } from "../../core/text/hf-model-files.ts";
import { VERSION } from "../../lib/version.ts";
import { SSE_HEADERS } from "../shared/serving/openai-answer.ts";
import { readJsonBody } from "../shared/serving/openai-body.ts";
import { runGeneration, SSE_HEARTBEAT, STOPPING, streamedOutput, wholeOutput, withHeaders } from "./generation.ts";
import type { TextFormat } from "./token-stream.ts";
import type { RankLoad } from "./dp-balance.ts";
import type { RequestFaults, Submitter } from "./generation.ts";
import type { GetLoadFormat } from "../../protocol/sglang.ts";
import type { RequestLimits } from "../../protocol/openai.ts";
import type { BodyCaps } from "../shared/serving/openai-body.ts";
import type { Logger } from "../../lib/logger.ts";

export const SGLANG_ROUTES = ["/get_load", "/server_info", "/get_server_info", "/model_info", "/get_model_info", "/health_generate", "/flush_cache", "/generate"] as const;

/** SGLang's answer to a flush: 200 when done, 400 while requests hold blocks (it then flushes nothing). */
const FLUSHED = "Cache flushed.\nPlease check backend logs for more details. (When there are running or waiting requests, the operation will not be performed.)\n";

/** What these routes need of the worker API's engines (a subset of its own). */
export interface SglangEngines extends Submitter {
  rankLoads(worker: number): (RankLoad & { kvTokens: number })[];
  workerLoad(worker: number): number;
  resetPrefixCache(worker: number): Promise<{ rank: number; running: number }[]>;
}

/** One worker's serving settings (the worker API's options extend these). */
export interface SglangRouteOptions {
  /** The worker's index in its process. */
  worker: number;
  modelName: string;
  maxModelLen: number | undefined;
  limits: RequestLimits & BodyCaps;
  logger: Logger;
  faults?: RequestFaults;
  /** Tokens per KV block and KV tokens per rank, for SGLang's /server_info. */
  blockSize: number;
  kvCapacityTokens: number;
  /** Which /get_load shape this worker answers (the router in front decides). */
  getLoadFormat: GetLoadFormat;
}

export interface SglangRouteContext {
  engines: SglangEngines;
  o: SglangRouteOptions;
  workerId: string;
  health(): Response;
  nextSeq(): number;
  /** The request's rank (the worker API's own rule), or its 400. */
  rankOf(req: Request, json: unknown): number | Response;
  /** The request's disaggregated leg (the worker API's own check). */
  disaggLegOf(json: unknown): Pick<GenerateRequest, "kvTransferParams" | "bootstrap"> | Response;
}

/** The handler for one of SGLANG_ROUTES. */
export function createSglangRoutes(ctx: SglangRouteContext): (req: Request, path: (typeof SGLANG_ROUTES)[number]) => Promise<Response> | Response {
  const { engines, o, workerId } = ctx;
  const served = (): ServedModel => ({
    model: o.modelName,
    maxModelLen: o.maxModelLen,
    blockSize: o.blockSize,
    dpSize: engines.rankLoads(o.worker).length,
    kvCapacityTokens: o.kvCapacityTokens,
    version: VERSION,
  });
  const only = (m: string, path: string) => openAiError(405, `use ${m} for ${path}`);

  async function flush(): Promise<Response> {
    const refused = await engines.resetPrefixCache(o.worker);
    if (refused.length === 0) return new Response(FLUSHED, { headers: { "content-type": "text/plain; charset=utf-8" } });
    const ranks = refused.map((r) => `rank ${r.rank} (${r.running} running)`).join(", ");
    return new Response(`Cache not flushed: requests are running on worker ${workerId} ${ranks}; the other ranks were flushed. Retry once idle.\n`, { status: 400, headers: { "content-type": "text/plain; charset=utf-8" } });
  }

  async function generate(req: Request): Promise<Response> {
    const startedMs = Date.now();
    const body = await readJsonBody(req, o.limits, o.logger, "/generate");
    if (body instanceof Response) return body;
    const parsed = parseSglangGenerate(body.json, o.limits);
    if (parsed instanceof BadRequest) return openAiError(400, parsed.message, { param: parsed.param });
    const tokens = parsed.prompt.kind === "text" ? tokenize(parsed.prompt.text) : parsed.prompt.ids;
    const param = parsed.prompt.kind === "text" ? "text" : "input_ids";
    if (tokens.length === 0) return openAiError(400, `${param}: the prompt has no tokens`, { param });
    const tooLong = contextLengthProblem(o.maxModelLen, tokens.length, parsed.maxNewTokens);
    if (tooLong !== undefined) return openAiError(400, tooLong, { code: CONTEXT_LENGTH_EXCEEDED, param });
    const dpRank = ctx.rankOf(req, body.json);
    if (dpRank instanceof Response) return dpRank;
    const leg = ctx.disaggLegOf(body.json);
    if (leg instanceof Response) return leg;
    const g: GenerateRequest = { worker: o.worker, dpRank, tokenIds: tokens, maxTokens: parsed.maxNewTokens, ...leg };
    const meta = { id: parsed.rid ?? req.headers.get("x-request-id") ?? `${workerId}-${ctx.nextSeq()}`, promptTokens: tokens.length };
    const servedBy = { "x-kvcr-worker": workerId, "x-kvcr-dp-rank": String(dpRank) };
    const latency = () => (Date.now() - startedMs) / 1000;
    const output = parsed.stream
      ? streamedOutput(SSE_HEADERS, generateStream(meta, latency))
      : wholeOutput(({ ids, summary }, headers) =>
          summary.finish_reason === "length"
            ? Response.json(sglangGenerateBody(meta, detokenize(ids), ids, { cachedTokens: summary.cached_tokens, e2eLatencyS: latency() }), { headers })
            : withHeaders(openAiError(503, STOPPING), headers),
        );
    return runGeneration(req, g, engines, o.faults, output, servedBy);
  }

  return (req, path) => {
    const method = req.method;
    switch (path) {
      case "/get_load":
        return method === "GET" ? Response.json(getLoadBody(o.getLoadFormat, engines.rankLoads(o.worker), engines.workerLoad(o.worker))) : only("GET", path);
      case "/server_info":
      case "/get_server_info":
        return method === "GET" ? Response.json(serverInfoBody(served())) : only("GET", path);
      case "/model_info":
      case "/get_model_info":
        return method === "GET" ? Response.json(modelInfoBody(MODEL_TYPE, ARCHITECTURES)) : only("GET", path);
      case "/health_generate":
        // SGLang runs a one-token generation; the engine here answers every step it is given, so health is the worker's own.
        return method === "GET" || method === "POST" ? ctx.health() : only("GET or POST", path);
      case "/flush_cache":
        return method === "POST" || method === "GET" ? flush() : only("POST", path);
      case "/generate":
        return method === "POST" ? generate(req) : only("POST", path);
    }
  };
}

/** /generate's SSE: every chunk carries the text and ids so far (SGLang's default), the last its finish_reason, then [DONE]. */
function generateStream(meta: { id: string; promptTokens: number }, latency: () => number): TextFormat {
  const ids: number[] = [];
  let text = "";
  return {
    tokens: (batch) => {
      let out = "";
      for (let i = 0; i < batch.length; i++) {
        ids.push(batch[i]!);
        text += detokenize([batch[i]!]);
        out += sseData(sglangGenerateBody(meta, text, ids, undefined));
      }
      return out;
    },
    finish: (s) =>
      s.finish_reason === "length"
        ? sseData(sglangGenerateBody(meta, text, ids, { cachedTokens: s.cached_tokens, e2eLatencyS: latency() })) + SSE_DONE
        : sseData(openAiErrorBody(503, STOPPING)) + SSE_DONE,
    heartbeat: SSE_HEARTBEAT,
  };
}
