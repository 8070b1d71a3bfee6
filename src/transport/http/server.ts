// The one place HTTP servers are opened: HTTP/1.1 of our own over Bun's TCP listener (why not
// Bun.serve: docs/DECISIONS.md, HTTP server). Roles hand in a fetch handler; this binds, reports the
// real port (0 = pick), closes connections idle on their client, and stops cleanly.
import type { Socket, SocketHandler, TCPSocketListener } from "bun";
import type { Logger } from "../../lib/logger.ts";
import { DEFAULT_REQUEST_LIMITS } from "../../protocol/http1-request.ts";
import { httpDate } from "../../protocol/http1-response-head.ts";
import { bindFailed } from "../bind-error.ts";
import { type ConnectionServer, ServerConnection } from "./server-connection.ts";
import { appFailed } from "./server-answers.ts";

export interface HttpServer {
  readonly port: number;
  readonly url: string;
  /** Stops listening at once; true (the default) also closes every connection, aborting requests in flight; false lets them finish. */
  stop(closeActiveConnections?: boolean): Promise<void>;
}

export interface HttpServerOptions {
  host: string;
  port: number;
  fetch: (req: Request) => Response | Promise<Response>;
  /** Seconds a connection may wait on its client (for a request, a body, or to read the answer) before it is closed. */
  idleTimeoutS?: number;
  /** Request body bytes past which the server answers 413 itself. */
  maxRequestBodySize?: number;
  /** Where a fault of the server itself is reported (the connection it happened on is closed). */
  logger?: Logger;
}

/** How long a closing connection waits for its client's own close (so its last bytes do not reset ours). */
const LINGER_MS = 2000;

export function serveHttp(opts: HttpServerOptions): HttpServer {
  const connections = new Set<ServerConnection>();
  let stopping = false;
  const closedWaiters: (() => void)[] = [];
  let dateSecond = -1;
  let date = "";
  const server: ConnectionServer = {
    fetch: opts.fetch,
    limits: { ...DEFAULT_REQUEST_LIMITS, maxBodyBytes: opts.maxRequestBodySize ?? DEFAULT_REQUEST_LIMITS.maxBodyBytes },
    ownHost: "",
    get stopping() {
      return stopping;
    },
    date() {
      const now = Date.now();
      const second = Math.floor(now / 1000);
      if (second !== dateSecond) {
        dateSecond = second;
        date = httpDate(now);
      }
      return date;
    },
    failed: appFailed,
    fault(err) {
      const text = `HTTP server: closing a connection after an internal error: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`;
      if (opts.logger) opts.logger.error(text);
      else console.error(text);
    },
    forget(conn) {
      connections.delete(conn);
      if (connections.size === 0) for (const wake of closedWaiters.splice(0)) wake();
    },
  };

  const handlers: SocketHandler<ServerConnection, "uint8array"> = {
    binaryType: "uint8array",
    open(socket) {
      socket.setNoDelay(true);
      const conn = new ServerConnection(socket as unknown as Socket<ServerConnection>, server);
      socket.data = conn;
      connections.add(conn);
      if (stopping) conn.terminate();
    },
    data: (socket, chunk) => socket.data.onData(chunk),
    drain: (socket) => socket.data.onDrain(),
    close: (socket) => socket.data?.onClose(),
    // A handler above threw: a fault of ours, reported; the connection it broke is closed.
    error: (socket, err) => {
      server.fault(err);
      socket.data?.terminate();
    },
  };

  let listener: TCPSocketListener<ServerConnection>;
  try {
    // Bun.listen is typed for the default "buffer" binary type only; the parser wants plain Uint8Array chunks.
    listener = Bun.listen<ServerConnection>({ hostname: opts.host, port: opts.port, socket: handlers as unknown as SocketHandler<ServerConnection> });
  } catch (err) {
    throw bindFailed("BIND_FAILED", "serve HTTP", opts.host, opts.port, err);
  }
  const port = listener.port;
  const host = opts.host.includes(":") ? `[${opts.host}]` : opts.host;
  (server as { ownHost: string }).ownHost = `${host}:${port}`;

  const idleMs = (opts.idleTimeoutS ?? 120) * 1000;
  const sweep = setInterval(() => {
    const now = performance.now();
    for (const conn of connections) conn.checkIdle(now, idleMs, LINGER_MS);
  }, Math.min(1000, Math.max(10, idleMs / 4)));
  sweep.unref();

  let listening = true;
  return {
    port,
    url: `http://${host}:${port}`,
    stop: async (force = true) => {
      stopping = true;
      if (listening) {
        listening = false;
        listener.stop(false);
      }
      for (const conn of [...connections]) {
        if (force) conn.terminate();
        else conn.closeWhenIdle();
      }
      if (connections.size > 0) await new Promise<void>((resolve) => closedWaiters.push(resolve));
      clearInterval(sweep);
    },
  };
}
