// Opens one HTTP server per worker for its OpenAI API (worker-api.ts), on --openai-port-base + i or
// --openai-ports[i]; port 0 takes the next free port of one plan (thousands of kernel port-0 searches
// would dominate start-up). A port that cannot be bound stops the start, naming the port and the
// flag; servers opened before it are closed through the caller's stack.
import { workerApiPorts, type MockerConfig } from "../../config/mocker.ts";
import type { Logger } from "../../lib/logger.ts";
import { bindFailed } from "../../transport/bind-error.ts";
import { serveHttp, type HttpServer } from "../../transport/http/server.ts";
import { createPortPlan } from "../../transport/port-plan.ts";
import { createWorkerApiFetch, type WorkerApiEngines } from "./worker-api.ts";
import type { RequestFaults } from "./generation.ts";

export interface WorkerApis {
  /** Per worker, by index: its API's base URL and port. */
  urls: string[];
  ports: number[];
  /** Stop accepting (the close's first step; open streams end as their requests are cancelled). */
  stopAccepting(): void;
}

export interface WorkerApiContext {
  engines: WorkerApiEngines;
  logger: Logger;
  faults: RequestFaults;
  closing: AbortSignal;
}

/** Undefined when no worker API is configured. */
export function serveWorkerApis(config: MockerConfig, ctx: WorkerApiContext, scope: AsyncDisposableStack): WorkerApis | undefined {
  const wanted = workerApiPorts(config);
  if (!wanted) return undefined;
  const plan = createPortPlan();
  const limits = { maxOutputTokens: config.maxTokensLimit, maxPromptBytes: config.maxPromptBytes, maxRequestBytes: config.maxRequestBytes, bodyTimeoutMs: config.bodyTimeoutMs };
  const servers: HttpServer[] = [];
  const wallSeconds = () => Date.now() / 1000;
  for (let i = 0; i < wanted.length; i++) {
    const fetch = createWorkerApiFetch(ctx.engines, {
      worker: i, modelName: config.modelName, maxModelLen: config.maxModelLen, limits, logger: ctx.logger, faults: ctx.faults, wallSeconds, closing: ctx.closing, lora: ctx.engines.lora?.adapters,
      blockSize: config.blockSize, kvCapacityTokens: config.numGpuBlocksOverride * config.blockSize, getLoadFormat: config.getLoadFormat,
    });
    const port = wanted[i]!;
    const serve = (p: number) => serveHttp({ host: config.host, port: p, fetch });
    let server: HttpServer;
    try {
      server = port === 0 ? plan.bindFree(serve) : serve(port);
    } catch (err) {
      const flag = config.openaiPorts ? `--openai-ports, worker ${i}` : `--openai-port-base ${config.openaiPortBase} + ${i}`;
      throw bindFailed("BIND_FAILED", `serve worker ${i}'s OpenAI API (${flag})`, config.host, port, (err as { cause?: unknown }).cause ?? err);
    }
    servers.push(server);
    scope.defer(() => server.stop(true).catch(() => {}));
  }
  return {
    urls: servers.map((s) => s.url),
    ports: servers.map((s) => s.port),
    stopAccepting: () => {
      for (const s of servers) void s.stop(false).catch(() => {});
    },
  };
}
