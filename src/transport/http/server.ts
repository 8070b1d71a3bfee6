// The one place HTTP servers are opened (Bun.serve). Roles hand in a fetch handler; this binds,
// reports the real port (port 0 = pick) and stops cleanly.
import type { Server } from "bun";
import { openAiError } from "../../protocol/openai.ts";
import { bindFailed } from "../bind-error.ts";

export interface HttpServer {
  readonly port: number;
  readonly url: string;
  stop(closeActiveConnections?: boolean): Promise<void>;
}

export interface HttpServerOptions {
  host: string;
  port: number;
  fetch: (req: Request, server: Server<unknown>) => Response | Promise<Response>;
  /** Seconds a connection may idle; streaming responses keep it busy. */
  idleTimeoutS?: number;
  maxRequestBodySize?: number;
}

export function serveHttp(opts: HttpServerOptions): HttpServer {
  let server: Server<unknown>;
  try {
    server = Bun.serve({
      hostname: opts.host,
      port: opts.port,
      idleTimeout: opts.idleTimeoutS ?? 120,
      maxRequestBodySize: opts.maxRequestBodySize ?? 64 * 1024 * 1024,
      fetch: opts.fetch,
      error: (err) => openAiError(500, `internal error: ${err.message}`),
    });
  } catch (err) {
    throw bindFailed("BIND_FAILED", "serve HTTP", opts.host, opts.port, err);
  }
  const port = server.port ?? opts.port;
  const host = opts.host.includes(":") ? `[${opts.host}]` : opts.host;
  return {
    port,
    url: `http://${host}:${port}`,
    stop: async (force = true) => {
      await server.stop(force);
    },
  };
}

