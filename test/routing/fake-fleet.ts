// Worker records and a RoutingState + app with a fake worker fetch, for frontend tests that need no
// socket: the app is called as `app.fetch(new Request(...))` and the "worker" is a function.
import { createRng } from "../../src/core/random/rng.ts";
import type { RouterOptions } from "../../src/core/routing/router-options.ts";
import type { RouterMode } from "../../src/protocol/router-modes.ts";
import { createLogger } from "../../src/lib/logger.ts";
import { createBlockHasher } from "../../src/lib/xxh3.ts";
import type { WorkerRecord } from "../../src/protocol/records.ts";
import { createFrontendApp, type FrontendApp, type FrontendAppDeps } from "../../src/roles/frontend/http-app.ts";
import { FrontendMetrics } from "../../src/roles/frontend/metrics.ts";
import { RoutingState } from "../../src/roles/frontend/routing-state.ts";
import { fetchTransport, type FetchLike, type GenerateBody } from "../../src/roles/frontend/worker-call.ts";

export const logger = createLogger({ level: "silent" });

export function workerRecord(id: string, over: Partial<WorkerRecord> = {}): WorkerRecord {
  return {
    worker_id: id,
    worker_index: 0,
    model: "m",
    worker_type: "mocker",
    request_url: `http://127.0.0.1:9/${id}/v1/generate`,
    data_parallel_size: 1,
    block_size: 4,
    total_gpu_blocks: 100,
    total_host_blocks: 0,
    kv_event_source_mode: "direct",
    raw_endpoints: [],
    raw_topic: "",
    capabilities: ["generate"],
    topology: {},
    ...over,
  };
}

export function routingState(mode: RouterMode = "kv", over: { router?: Omit<RouterOptions, "mode">; blockSize?: number; overloadStatus?: number; now?: () => number; ejectAfter?: number } = {}): RoutingState {
  return new RoutingState({
    router: { ...over.router, mode },
    blockSize: over.blockSize,
    overloadStatus: over.overloadStatus,
    ejectAfter: over.ejectAfter,
    hasher: createBlockHasher(),
    rng: createRng(7),
    logger,
    now: over.now ?? (() => performance.now()),
  });
}

/** A worker answering `lines` as NDJSON (default: one token then a summary). */
export function ndjsonWorker(onCall: (url: string, body: GenerateBody) => void = () => {}, lines?: (body: GenerateBody) => string[]): FetchLike {
  return async (url, init) => {
    const body = JSON.parse(String(init.body)) as GenerateBody;
    onCall(url, body);
    const out = lines?.(body) ?? [
      ...Array.from({ length: body.max_tokens }, (_, i) => JSON.stringify({ token_id: 100 + i })),
      JSON.stringify({ finish_reason: "length", prompt_tokens: body.token_ids.length, cached_tokens: 0, host_loaded_tokens: 0, completion_tokens: body.max_tokens }),
    ];
    return new Response(out.join("\n") + "\n", { headers: { "content-type": "application/x-ndjson" } });
  };
}

/** The frontend app over `state`, its workers answering through `fetchWorker`; `over` replaces any dependency. */
export function app(state: RoutingState, fetchWorker: FetchLike, over: Partial<FrontendAppDeps> = {}): FrontendApp {
  return createFrontendApp({
    state,
    metrics: new FrontendMetrics(),
    logger,
    maxRequestBytes: 4096,
    maxOutputTokens: 1000,
    maxPromptBytes: 1 << 20,
    bodyTimeoutMs: 30_000,
    stallTimeoutMs: 5000,
    callWorker: fetchTransport(fetchWorker),
    now: () => performance.now(),
    wallSeconds: () => 1_700_000_000,
    idPrefix: "t",
    ...over,
  });
}

export function post(path: string, body: unknown, init: RequestInit = {}): Request {
  return new Request(`http://frontend${path}`, { method: "POST", body: typeof body === "string" ? body : JSON.stringify(body), ...init });
}
