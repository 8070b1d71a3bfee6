// The mocker process's HTTP API: POST /v1/generate streams NDJSON token lines then a summary
// line; /live, /health (200 once every worker registered), /metrics (Prometheus text), /version;
// GET /v1/kv-dump?worker=W&dp_rank=R, a (worker, rank)'s full KV state as one raw payload
// (docs/http-api.md, "State dump"); with the process's extra routes, the truth (/v1/residency) and
// the fault API (/admin/*, only with --admin). HTTP faults act on /v1/generate here.
import type { DiscoveryHealth } from "../../discovery/status.ts";
import { CONTEXT_LENGTH_EXCEEDED, contextLengthProblem } from "../../protocol/context-length.ts";
import { parseGenerateRequest } from "../../protocol/generate.ts";
import { DUMP_CONTENT_TYPE, DUMP_PATH, DUMP_SEQ_HEADER } from "../../protocol/kv-events/state-dump.ts";
import { openAiError } from "../../protocol/openai.ts";
import { PROMETHEUS_CONTENT_TYPE, renderMetrics, type MetricFamily } from "../../protocol/prometheus.ts";
import { pathOf } from "../../transport/http/path-of.ts";
import { VERSION_PATH, versionResponse } from "../shared/serving/version.ts";
import { ADMIN_PREFIX } from "./faults/admin-app.ts";
import { runGeneration, streamedOutput, type RequestFaults, type Submitter, type SubmitOutcome } from "./generation.ts";
import { OVERLAP_PATH, overlapRoute, RESIDENCY_PATH, residencyRoute, type ResidencyDeps } from "./residency-app.ts";
import type { TokenSink } from "./token-stream.ts";

export interface WorkerPool extends Submitter {
  /** Every worker record is published (and, in state-agent mode, its attachment intents). */
  healthy(): boolean;
  /** The discovery connection (backend, connected, …), shown on /health; degraded discovery makes
   *  the status "degraded" (still 200: a process keeps serving through it with what it knows). */
  discovery?: () => DiscoveryHealth;
  metrics(): MetricFamily[];
  /** Every resident block of (worker, rank) as one raw payload and the raw seq it reflects. */
  dump?(worker: number, rank: number): Promise<DumpReply>;
  /** The worker's id, for the x-kvcr-worker header (default: its index). */
  workerId?(worker: number): string;
}

/** The routes beyond the worker API, each optional. */
export interface MockerRoutes {
  /** The fault API (--admin); without it every /admin/* path is a 404. */
  admin?: (req: Request, pathname: string) => Promise<Response>;
  /** GET /v1/residency and POST /v1/residency/overlap. */
  residency?: ResidencyDeps;
  /** HTTP faults of /v1/generate; `closing` aborts when the process closes (hung requests end). */
  faults?: RequestFaults;
}

export type DumpReply = { ok: true; seq: number; payload: Uint8Array } | { ok: false; status: 400 | 404 | 500 | 501; message: string };

export interface HttpAppLimits {
  maxPromptTokens: number;
  maxOutputTokens: number;
  /** --max-model-len: prompt + max_tokens above it is a 400, as vLLM (unset: no check). */
  maxModelLen?: number;
}

const NDJSON_OUTPUT = streamedOutput({ "content-type": "application/x-ndjson" });
const ROUTES: ReadonlySet<string> = new Set(["/v1/generate", DUMP_PATH, "/live", "/health", "/metrics", VERSION_PATH, RESIDENCY_PATH, OVERLAP_PATH]);

export function createMockerFetch(pool: WorkerPool, limits: HttpAppLimits, routes: MockerRoutes = {}): (req: Request) => Promise<Response> {
  return async (req) => {
    const pathname = pathOf(req.url, ROUTES);
    if (pathname === "/v1/generate") {
      if (req.method !== "POST") return openAiError(405, "use POST for /v1/generate");
      return generate(req, pool, limits, routes.faults);
    }
    if (pathname.startsWith(ADMIN_PREFIX) || pathname === ADMIN_PREFIX.slice(0, -1)) {
      return routes.admin ? routes.admin(req, pathname) : openAiError(404, `no route ${pathname}: the fault API needs --admin`);
    }
    if (routes.residency && pathname === RESIDENCY_PATH) return residencyRoute(req, routes.residency);
    if (routes.residency && pathname === OVERLAP_PATH) return overlapRoute(req, routes.residency);
    if (pathname === VERSION_PATH) return versionResponse(req.method);
    if (req.method !== "GET") return openAiError(405, `use GET for ${pathname}`);
    switch (pathname) {
      case "/live":
        return Response.json({ status: "live" });
      case "/health":
      {
        const discovery = pool.discovery?.();
        const body = (status: string) => (discovery === undefined ? { status } : { status, discovery });
        if (!pool.healthy()) return Response.json(body("starting"), { status: 503 });
        return Response.json(body(discovery?.degraded ? "degraded" : "healthy"));
      }
      case "/metrics":
        return new Response(renderMetrics(pool.metrics()), { headers: { "content-type": PROMETHEUS_CONTENT_TYPE } });
      case DUMP_PATH:
        return dump(req, pool);
      default:
        return openAiError(404, `no route ${pathname}; routes: POST /v1/generate, GET /live, /health, /metrics, /version, /v1/kv-dump, /v1/residency, POST /v1/residency/overlap`);
    }
  };
}

async function generate(req: Request, pool: WorkerPool, limits: HttpAppLimits, faults: RequestFaults | undefined): Promise<Response> {
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
  const { worker, dpRank } = parsed.value;
  const servedBy = { "x-kvcr-worker": pool.workerId?.(worker) ?? String(worker), "x-kvcr-dp-rank": String(dpRank) };
  return runGeneration(req, parsed.value, pool, faults, NDJSON_OUTPUT, servedBy);
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
