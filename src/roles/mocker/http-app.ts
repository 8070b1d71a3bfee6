// The mocker process's HTTP API: POST /v1/generate streams NDJSON token lines then a summary
// line; /live, /health (200 once every worker registered), /metrics (Prometheus text).
import { parseGenerateRequest, type GenerateRequest } from "../../protocol/generate.ts";
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
}

export interface HttpAppLimits {
  maxPromptTokens: number;
  maxOutputTokens: number;
}

const NDJSON_HEADERS = { "content-type": "application/x-ndjson" };
const ROUTES: ReadonlySet<string> = new Set(["/v1/generate", "/live", "/health", "/metrics"]);

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
      default:
        return openAiError(404, `no route ${pathname}; routes: POST /v1/generate, GET /live, /health, /metrics`);
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
