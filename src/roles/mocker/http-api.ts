// The mocker process's HTTP API (SPEC §3): POST /v1/generate streams NDJSON token lines then a
// summary line; /live, /health (200 once every worker registered), /metrics (Prometheus text).
import { parseGenerateRequest, summaryLine, tokenLine, type GenerateRequest, type GenerateSummary } from "../../protocol/generate.ts";
import { PROMETHEUS_CONTENT_TYPE, renderMetrics, type MetricFamily } from "../../protocol/prometheus.ts";
import { jsonError } from "../../transport/http/server.ts";

/** Where a request's output goes; calls arrive from the live loop as steps complete. */
export interface TokenSink {
  tokens(ids: readonly number[]): void;
  finish(summary: GenerateSummary): void;
}

export type SubmitOutcome = { ok: true; requestId: string } | { ok: false; status: 400 | 404 | 409 | 503; message: string };

export interface WorkerPool {
  /** Workers are registered (and attached in state-agent mode). */
  healthy(): boolean;
  submit(req: GenerateRequest, sink: TokenSink): SubmitOutcome;
  cancel(requestId: string): void;
  metrics(): MetricFamily[];
}

export interface HttpApiLimits {
  maxPromptTokens: number;
  maxOutputTokens: number;
}

export function createMockerFetch(pool: WorkerPool, limits: HttpApiLimits): (req: Request) => Promise<Response> {
  return async (req) => {
    const { pathname } = new URL(req.url);
    if (pathname === "/v1/generate") {
      if (req.method !== "POST") return jsonError(405, "use POST for /v1/generate");
      return generate(req, pool, limits);
    }
    if (req.method !== "GET") return jsonError(405, `use GET for ${pathname}`);
    switch (pathname) {
      case "/live":
        return Response.json({ status: "live" });
      case "/health":
        return pool.healthy() ? Response.json({ status: "healthy" }) : Response.json({ status: "starting" }, { status: 503 });
      case "/metrics":
        return new Response(renderMetrics(pool.metrics()), { headers: { "content-type": PROMETHEUS_CONTENT_TYPE } });
      default:
        return jsonError(404, `no route ${pathname}; routes: POST /v1/generate, GET /live, /health, /metrics`);
    }
  };
}

async function generate(req: Request, pool: WorkerPool, limits: HttpApiLimits): Promise<Response> {
  let body: unknown;
  try {
    body = await req.json();
  } catch (err) {
    return jsonError(400, `body is not valid JSON: ${(err as Error).message}`);
  }
  const parsed = parseGenerateRequest(body, limits);
  if (!parsed.ok) return jsonError(400, parsed.problem);

  const encoder = new TextEncoder();
  let controller: ReadableStreamDefaultController<Uint8Array> | undefined;
  let done = false;
  const buffered: Uint8Array[] = [];
  const write = (text: string) => {
    const bytes = encoder.encode(text);
    if (controller) controller.enqueue(bytes);
    else buffered.push(bytes);
  };
  const sink: TokenSink = {
    tokens(ids) {
      if (done) return;
      let text = "";
      for (const id of ids) text += tokenLine(id);
      write(text);
    },
    finish(summary) {
      if (done) return;
      done = true;
      write(summaryLine(summary));
      controller?.close();
    },
  };
  const outcome = pool.submit(parsed.value, sink);
  if (!outcome.ok) return jsonError(outcome.status, outcome.message);
  // A client that goes away cancels its request so its blocks are freed.
  req.signal.addEventListener("abort", () => {
    if (!done) {
      done = true;
      pool.cancel(outcome.requestId);
    }
  });
  const stream = new ReadableStream<Uint8Array>({
    start(c) {
      controller = c;
      for (const b of buffered.splice(0)) c.enqueue(b);
      if (done) c.close();
    },
    cancel() {
      if (!done) {
        done = true;
        pool.cancel(outcome.requestId);
      }
    },
  });
  return new Response(stream, { headers: { "content-type": "application/x-ndjson" } });
}
