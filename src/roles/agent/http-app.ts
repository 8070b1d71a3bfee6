// The agent's HTTP API as a pure app (route table, 404/405 and errors inside; no port in tests):
// GET /live, /health, /metrics, /version, /v1/slots, /v1/snapshot; POST /v1/sources (201, 400, 409, 413, 500;
// all or nothing: nothing registered unless 201);
// DELETE /v1/sources/{cache_owner_id} (URL-encoded; 404 when unknown).
import { discoveryHealth, discoveryMetricFamilies } from "../../discovery/status.ts";
import type { DiscoveryStore } from "../../discovery/store.ts";
import { readCapped } from "../../lib/read-capped.ts";
import { openAiError } from "../../protocol/openai.ts";
import { PROMETHEUS_CONTENT_TYPE, renderMetrics } from "../../protocol/prometheus.ts";
import { VERSION_PATH, versionResponse } from "../shared/serving/version.ts";
import type { KvStateAgent } from "./agent.ts";

/** Largest POST /v1/sources body (an intent is a few hundred bytes). */
export const MAX_SOURCE_BODY_BYTES = 64 * 1024;

export interface AgentApp {
  fetch(req: Request): Promise<Response>;
}

type Handler = (req: Request, param: string) => Response | Promise<Response>;

/** `discovery`: its connection shows on /health (degraded discovery makes it "degraded", still 200) and /metrics. */
export function createAgentApp(agent: KvStateAgent, isLive: () => boolean, discovery?: DiscoveryStore): AgentApp {
  const routes: { path: string; prefix?: boolean; methods: Record<string, Handler> }[] = [
    { path: "/live", methods: { GET: () => (isLive() ? Response.json({ status: "live" }) : Response.json({ status: "starting" }, { status: 503 })) } },
    {
      path: "/health",
      methods: {
        GET: () => {
          const h = agent.health();
          if (!discovery) return Response.json(h, { status: h.healthy ? 200 : 503 });
          // Discovery that may be missing changes (intents the agent should follow) is degraded, not unhealthy.
          const d = discoveryHealth(discovery);
          return Response.json({ ...h, status: h.status === "healthy" && d.degraded ? "degraded" : h.status, discovery: d }, { status: h.healthy ? 200 : 503 });
        },
      },
    },
    {
      path: "/metrics",
      methods: { GET: () => new Response(renderMetrics([...agent.metrics(), ...(discovery ? discoveryMetricFamilies(discovery) : [])]), { headers: { "content-type": PROMETHEUS_CONTENT_TYPE } }) },
    },
    { path: VERSION_PATH, methods: { GET: () => versionResponse("GET") } },
    { path: "/v1/slots", methods: { GET: () => Response.json(agent.slotViews()) } },
    { path: "/v1/snapshot", methods: { GET: () => Response.json(agent.snapshot()) } },
    { path: "/v1/sources", methods: { POST: (req) => addSource(agent, req) } },
    {
      path: "/v1/sources/",
      prefix: true,
      methods: {
        DELETE: (_req, param) => {
          let owner: string;
          try {
            owner = decodeURIComponent(param);
          } catch {
            return openAiError(400, `bad cache owner id in the path: ${JSON.stringify(param)} is not valid URL encoding`);
          }
          const r = agent.deleteRuntimeSource(owner);
          return r.status === 201 ? Response.json({ status: "removed", cache_owner_id: owner }) : openAiError(r.status, r.message);
        },
      },
    },
  ];
  const list = "GET /live, /health, /metrics, /version, /v1/slots, /v1/snapshot; POST /v1/sources; DELETE /v1/sources/{cache_owner_id}";

  return {
    async fetch(req) {
      const url = new URL(req.url);
      // The raw path: a CacheOwner id contains "/", so clients encode it as %2F.
      const path = url.pathname;
      const route = routes.find((r) => (r.prefix ? path.startsWith(r.path) && path.length > r.path.length : path === r.path));
      if (!route) return openAiError(404, `no route ${path}; routes: ${list}`);
      const handler = route.methods[req.method];
      if (!handler) return openAiError(405, `use ${Object.keys(route.methods).join(" or ")} for ${route.prefix ? `${route.path}{id}` : route.path}`);
      try {
        return await handler(req, route.prefix ? path.slice(route.path.length) : "");
      } catch (err) {
        return openAiError(500, `internal error: ${(err as Error).message}`);
      }
    },
  };
}

async function addSource(agent: KvStateAgent, req: Request): Promise<Response> {
  const length = Number(req.headers.get("content-length") ?? "0");
  if (length > MAX_SOURCE_BODY_BYTES) return openAiError(413, `body of ${length} bytes exceeds ${MAX_SOURCE_BODY_BYTES}`);
  // Capped as it is read: a chunked body declares no length.
  const text = req.body ? await readCapped(req.body.getReader(), MAX_SOURCE_BODY_BYTES) : "";
  if (text === undefined) return openAiError(413, `body of more than ${MAX_SOURCE_BODY_BYTES} bytes exceeds ${MAX_SOURCE_BODY_BYTES}`);
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (err) {
    return openAiError(400, `body is not valid JSON: ${(err as Error).message}`);
  }
  const r = agent.addRuntimeSource(body);
  if (r.status !== 201) return openAiError(r.status, r.message);
  return Response.json({ status: "added", cache_owner_id: (body as { cache_owner_id: string }).cache_owner_id }, { status: 201 });
}
