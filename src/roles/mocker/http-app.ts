// The mocker process's HTTP API: POST /v1/generate streams NDJSON token lines then a summary
// line; /live, /health (200 once every worker registered), /metrics (Prometheus text);
// GET /v1/kv-dump?worker=W&dp_rank=R, a (worker, rank)'s full KV state as one raw payload
// (docs/http-api.md, "State dump").
import { CONTEXT_LENGTH_EXCEEDED, contextLengthProblem } from "../../protocol/context-length.ts";
import { parseGenerateRequest, type GenerateRequest } from "../../protocol/generate.ts";
import { DUMP_CONTENT_TYPE, DUMP_PATH, DUMP_SEQ_HEADER } from "../../protocol/kv-events/state-dump.ts";
import { openAiError } from "../../protocol/openai.ts";
import { PROMETHEUS_CONTENT_TYPE, renderMetrics, type MetricFamily } from "../../protocol/prometheus.ts";
import { pathOf } from "../../transport/http/path-of.ts";
import { TokenStream, type TokenSink } from "./token-stream.ts";

export type { TokenSink };

export type SubmitOutcome = { ok: true; requestId: string } | { ok: false; status: 400 | 404 | 409 | 503; message: string };

export interface WorkerPool {
  /** Every worker record is published (and, in state-agent mode, its attachment intents). */
  healthy(): boolean;
  /** The discovery connection (backend, connected, …), shown on /health; not part of healthiness:
   *  a process keeps serving through a discovery outage with what it knows. */
  discovery?: () => unknown;
  submit(req: GenerateRequest, sink: TokenSink): SubmitOutcome;
  cancel(requestId: string): void;
  metrics(): MetricFamily[];
  /** Every resident block of (worker, rank) as one raw payload and the raw seq it reflects. */
  dump?(worker: number, rank: number): Promise<DumpReply>;
}

export type DumpReply = { ok: true; seq: number; payload: Uint8Array } | { ok: false; status: 400 | 404 | 500 | 501; message: string };

export interface HttpAppLimits {
  maxPromptTokens: number;
  maxOutputTokens: number;
  /** --max-model-len: prompt + max_tokens above it is a 400, as vLLM (unset: no check). */
  maxModelLen?: number;
}

const NDJSON_HEADERS = { "content-type": "application/x-ndjson" };
const ROUTES: ReadonlySet<string> = new Set(["/v1/generate", DUMP_PATH, "/live", "/health", "/metrics"]);

export function createMockerFetch(pool: WorkerPool, limits: HttpAppLimits): (req: Request) => Promise<Response> {
  return async (req) => {
    const pathname = pathOf(req.url, ROUTES);
    if (pathname === "/v1/generate") {
      if (req.method !== "POST") return openAiError(405, "use POST for /v1/generate");
      return generate(req, pool, limits);
    }
    if (req.method !== "GET") return openAiError(405, `use GET for ${pathname}`);
    switch (pathname) {
      case "/live":
        return Response.json({ status: "live" });
      case "/health":
      {
        const discovery = pool.discovery?.();
        const body = (status: string) => (discovery === undefined ? { status } : { status, discovery });
        return pool.healthy() ? Response.json(body("healthy")) : Response.json(body("starting"), { status: 503 });
      }
      case "/metrics":
        return new Response(renderMetrics(pool.metrics()), { headers: { "content-type": PROMETHEUS_CONTENT_TYPE } });
      case DUMP_PATH:
        return dump(req, pool);
      default:
        return openAiError(404, `no route ${pathname}; routes: POST /v1/generate, GET /live, /health, /metrics, /v1/kv-dump`);
    }
  };
}

async function generate(req: Request, pool: WorkerPool, limits: HttpAppLimits): Promise<Response> {
  let body: unknown;
  try {
    body = await req.json();
  } catch (err) {
    return openAiError(400, `body is not valid JSON: ${(err as Error).message}`);
  }
  const parsed = parseGenerateRequest(body, limits);
  if (!parsed.ok) return openAiError(400, parsed.problem);
  const tooLong = contextLengthProblem(limits.maxModelLen, parsed.value.tokenIds.length, parsed.value.maxTokens);
  if (tooLong !== undefined) return openAiError(400, tooLong, { code: CONTEXT_LENGTH_EXCEEDED });

  let requestId: string | undefined;
  const stream = new TokenStream(() => {
    // A client that goes away cancels its request so its blocks are freed.
    if (requestId !== undefined) pool.cancel(requestId);
  });
  const outcome = pool.submit(parsed.value, stream);
  if (!outcome.ok) return openAiError(outcome.status, outcome.message);
  requestId = outcome.requestId;
  req.signal.addEventListener("abort", () => stream.cancel());
  // The head goes out with the first output: a request already finished by then is one plain body.
  await stream.firstOutput;
  const whole = stream.takeWholeBody();
  return new Response(whole ?? stream.body, { headers: NDJSON_HEADERS });
}

async function dump(req: Request, pool: WorkerPool): Promise<Response> {
  const q = new URL(req.url).searchParams;
  const index = (name: string) => {
    const text = q.get(name);
    return text !== null && /^(0|[1-9][0-9]{0,8})$/.test(text) ? Number(text) : undefined;
  };
  const worker = index("worker");
  const rank = index("dp_rank");
  if (worker === undefined || rank === undefined) return openAiError(400, "expected ?worker=W&dp_rank=R (non-negative integers)");
  if (!pool.dump) return openAiError(501, "this process serves no state dumps");
  const r = await pool.dump(worker, rank);
  if (!r.ok) return openAiError(r.status, r.message);
  return new Response(r.payload, { headers: { "content-type": DUMP_CONTENT_TYPE, [DUMP_SEQ_HEADER]: String(r.seq) } });
}
