// A pooled HTTP/1.1 keep-alive client over Bun sockets, for the frontend's hot path to its workers
// (`POST /v1/generate`, docs/http-api.md): one preformatted write per request and a byte parser per
// connection, with none of fetch's Request/Response/ReadableStream objects per call (fetch was a
// third of the frontend's CPU per request). Plain http: only; callers keep fetch for the rest.
//
// Decisions: idle connections are kept per origin (LIFO, at most maxIdlePerOrigin and maxIdle in
// all, so a frontend over thousands of workers does not hoard sockets), closed after idleTimeoutMs
// (below common servers' keep-alive timeouts, so a server rarely closes one under us). A request
// whose *reused* connection turns out dead is sent once more on a new connection only when that
// cannot run it twice (Go's net/http rule): nothing of it reached the socket, or it is a GET and
// not a byte of the answer came back. A POST that was written may have reached the worker (which
// may be generating for it): it fails rather than risk a second generation. Aborting a request
// mid-response closes its connection, which is how the worker learns of it.
import type { Socket, SocketHandler } from "bun";
import { Http1ParseError, Http1ResponseParser } from "../../protocol/http1-response.ts";
import { Exchange, HttpConnectionError, type ClientResponse, type PendingRequest, type ResponseWatch } from "./client-exchange.ts";

export interface KeepAliveClientOptions {
  maxIdlePerOrigin?: number;
  maxIdle?: number;
  idleTimeoutMs?: number;
}

export interface KeepAliveRequest {
  method: "GET" | "POST";
  /** Lower-case names; host and content-length are set by the client. */
  headers?: Record<string, string>;
  body?: string;
  signal?: AbortSignal;
  /** Hears the response arrive, whether or not the caller is reading yet. */
  watch?: ResponseWatch;
}


interface Target {
  origin: string;
  host: string;
  port: number;
  /** "POST path HTTP/1.1\r\nhost: ...\r\n" and the same for GET, built once per URL. */
  postHead: string;
  getHead: string;
}

export class KeepAliveClient {
  private readonly idle = new Map<string, Connection[]>();
  private readonly targets = new Map<string, Target>();
  private readonly open = new Set<Connection>();
  private readonly maxIdlePerOrigin: number;
  private readonly maxIdle: number;
  private idleCount = 0;
  private sweeper: ReturnType<typeof setInterval> | undefined;
  readonly idleTimeoutMs: number;
  private closed = false;

  constructor(opts: KeepAliveClientOptions = {}) {
    this.maxIdlePerOrigin = opts.maxIdlePerOrigin ?? 256;
    this.maxIdle = opts.maxIdle ?? 1024;
    this.idleTimeoutMs = opts.idleTimeoutMs ?? 4000;
  }

  /** True when this client can carry the URL (plain http:). */
  static supports(url: string): boolean {
    return url.startsWith("http://");
  }

  /** Sends a request; `init.signal` aborts it. */
  request(url: string, init: KeepAliveRequest): Promise<ClientResponse> {
    const signal = init.signal;
    if (signal?.aborted) return Promise.reject(signal.reason);
    const pending = this.start(url, init) as Exchange;
    if (!signal) return pending.response;
    const onAbort = () => pending.abort(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    pending.whenDone(() => signal.removeEventListener("abort", onAbort));
    return pending.response;
  }

  /** Sends a request without an AbortSignal (the hot path: no listener per request); abort() stops it. */
  start(url: string, init: Omit<KeepAliveRequest, "signal">): PendingRequest {
    const exchange = new Exchange();
    if (this.closed) {
      exchange.fail(new HttpConnectionError("the HTTP client is closed"));
      return exchange;
    }
    const target = this.target(url);
    let head = init.method === "POST" ? target.postHead : target.getHead;
    for (const name in init.headers) head += `${name}: ${init.headers[name]}\r\n`;
    const body = init.body ?? "";
    const bodyBytes = utf8Length(body);
    head += `content-length: ${bodyBytes}\r\n\r\n`;
    exchange.bytes = head + body;
    // The head is ASCII (header values included, as callers pass them): its length is its byte count.
    exchange.byteLength = head.length + bodyBytes;
    exchange.idempotent = init.method === "GET";
    exchange.watch = init.watch;
    this.dispatch(target, exchange, true);
    return exchange;
  }

  /** Closes every connection; requests in flight fail. */
  close(): void {
    this.closed = true;
    if (this.sweeper) clearInterval(this.sweeper);
    for (const c of [...this.open]) c.destroy(new HttpConnectionError("the HTTP client closed"));
    this.idle.clear();
  }

  /** Connections open now (idle or busy); for tests and /metrics. */
  get connections(): number {
    return this.open.size;
  }

  /** Connections open and waiting for a request. */
  get idleConnections(): number {
    return this.idleCount;
  }

  private target(url: string): Target {
    let t = this.targets.get(url);
    if (t) return t;
    const u = new URL(url);
    if (u.protocol !== "http:") throw new HttpConnectionError(`${url}: only http: URLs are supported here`);
    const port = u.port === "" ? 80 : Number(u.port);
    const host = u.hostname.startsWith("[") ? u.hostname.slice(1, -1) : u.hostname;
    const path = `${u.pathname}${u.search}`;
    const line = ` ${path} HTTP/1.1\r\nhost: ${u.host}\r\n`;
    t = { origin: `${host}:${port}`, host, port, postHead: `POST${line}`, getHead: `GET${line}` };
    if (this.targets.size > 10_000) this.targets.clear(); // worker URLs come and go: no unbounded cache
    this.targets.set(url, t);
    return t;
  }

  /** Sends the exchange on an idle connection to its origin, or a new one (also Connection's retry). */
  dispatch(target: Target, exchange: Exchange, mayReuse: boolean): void {
    const now = performance.now();
    const list = this.idle.get(target.origin);
    while (mayReuse && list && list.length > 0) {
      const conn = list.pop()!;
      this.idleCount--;
      if (now - conn.idleSince > this.idleTimeoutMs) {
        conn.destroy(undefined);
        continue;
      }
      conn.send(exchange, target);
      return;
    }
    const conn = new Connection(this, target.origin);
    this.open.add(conn);
    conn.send(exchange, target);
    Bun.connect<Connection>({ hostname: target.host, port: target.port, data: conn, socket: handlers }).catch((err: Error & { code?: string }) => {
      const code = err.code && !err.message.includes(err.code) ? ` (${err.code})` : "";
      conn.destroy(new HttpConnectionError(`cannot connect to ${target.origin}: ${err.message}${code}`));
    });
  }

  /** Called by a Connection that finished its response and may carry another. */
  release(conn: Connection): void {
    if (this.closed || this.idleCount >= this.maxIdle) return conn.destroy(undefined);
    let list = this.idle.get(conn.origin);
    if (!list) this.idle.set(conn.origin, (list = []));
    if (list.length >= this.maxIdlePerOrigin) return conn.destroy(undefined);
    conn.idleSince = performance.now();
    list.push(conn);
    this.idleCount++;
    // Idle connections nobody reuses are closed by a sweep (unref'd: it never keeps a process alive).
    if (!this.sweeper) {
      this.sweeper = setInterval(() => this.closeExpired(), this.idleTimeoutMs);
      this.sweeper.unref();
    }
  }

  /** Called by a Connection that closed. */
  forget(conn: Connection): void {
    this.open.delete(conn);
    const list = this.idle.get(conn.origin);
    const i = list ? list.indexOf(conn) : -1;
    if (i >= 0) {
      list!.splice(i, 1);
      this.idleCount--;
    }
    if (list && list.length === 0) this.idle.delete(conn.origin);
  }

  /** Closes the connections idle for longer than idleTimeoutMs (oldest first in each list). */
  closeExpired(): void {
    const cutoff = performance.now() - this.idleTimeoutMs;
    for (const list of [...this.idle.values()]) {
      while (list.length > 0 && list[0]!.idleSince <= cutoff) list[0]!.destroy(undefined);
    }
    if (this.idleCount === 0 && this.sweeper) {
      clearInterval(this.sweeper);
      this.sweeper = undefined;
    }
  }
}

/** One request and its response as the caller sees it. */
/** One socket; carries one exchange at a time. */
class Connection {
  socket: Socket<Connection> | undefined;
  idleSince = 0;
  private current: Exchange | undefined;
  private target: Target | undefined;
  private reused = false;
  private used = false;
  private pendingOut: Uint8Array | undefined;
  private dead = false;
  private readonly parser: Http1ResponseParser;

  constructor(
    private readonly client: KeepAliveClient,
    readonly origin: string,
  ) {
    this.parser = new Http1ResponseParser({
      head: (h) => this.current?.head(h),
      body: (c) => this.current?.body(c),
      end: (keepAlive) => this.ended(keepAlive),
    });
  }

  send(exchange: Exchange, target: Target): void {
    this.current = exchange;
    this.target = target;
    exchange.conn = this;
    this.reused = this.used;
    this.used = true;
    this.parser.begin();
    if (this.socket) this.write(exchange);
  }

  attach(socket: Socket<Connection>): void {
    this.socket = socket;
    if (this.dead) return void socket.terminate();
    if (this.current) this.write(this.current);
  }

  onData(chunk: Uint8Array): void {
    if (this.dead) return;
    try {
      this.parser.feed(chunk);
    } catch (err) {
      this.destroy(err instanceof Http1ParseError ? new HttpConnectionError(`bad response from ${this.origin}: ${err.message}`) : err);
    }
  }

  onDrain(): void {
    const rest = this.pendingOut;
    if (!rest || !this.socket) return;
    this.pendingOut = undefined;
    this.writeBytes(rest);
  }

  /** The socket closed (either side). */
  onClosed(why: string | undefined): void {
    if (this.dead || this.retried()) return;
    const ex = this.current;
    if (ex && !ex.idempotent && ex.written && this.parser.received === 0) {
      return this.destroy(new HttpConnectionError(`the connection to ${this.origin} closed before any answer${why ? ` (${why})` : ""}; the request may have reached it, so it is not sent again`));
    }
    try {
      if (ex) this.parser.eof();
    } catch (err) {
      return this.destroy(new HttpConnectionError(`${this.origin}: ${(err as Error).message}${why ? ` (${why})` : ""}`));
    }
    this.destroy(undefined);
  }

  /** A socket error; retried like a close when that is safe. */
  onError(err: Error): void {
    if (this.dead || this.retried()) return;
    this.destroy(new HttpConnectionError(`socket error talking to ${this.origin}: ${err.message}`));
  }

  /**
   * A dead reused connection's request goes out again on a new one when that cannot run it twice:
   * none of it was written, or it is idempotent and no answer byte came back (Go's net/http rule).
   */
  private retried(): boolean {
    const ex = this.current;
    if (!ex || !this.reused || !this.target || this.parser.received !== 0 || (ex.written && !ex.idempotent)) return false;
    this.current = undefined;
    this.finishDestroy();
    ex.written = false;
    this.client.dispatch(this.target, ex, false);
    return true;
  }

  destroy(err: unknown): void {
    if (this.dead) return;
    const ex = this.current;
    this.current = undefined;
    this.finishDestroy();
    if (ex) ex.fail(err ?? new HttpConnectionError(`the connection to ${this.origin} closed`));
  }

  private finishDestroy(): void {
    this.dead = true;
    this.client.forget(this);
    this.socket?.terminate();
  }

  private ended(keepAlive: boolean): void {
    const ex = this.current;
    this.current = undefined;
    ex?.end();
    if (keepAlive && !this.pendingOut) this.client.release(this);
    else this.destroy(undefined);
  }

  private write(ex: Exchange): void {
    const n = this.socket!.write(ex.bytes);
    if (n < 0) {
      // Nothing was sent: a pooled connection the server already dropped is safe to retry.
      if (!this.retried()) this.destroy(new HttpConnectionError(`the connection to ${this.origin} is closed`));
      return;
    }
    if (n > 0) ex.written = true;
    // Rare: the kernel took part of it (a long prompt). The rest waits for drain, as bytes.
    if (n < ex.byteLength) this.pendingOut = Buffer.from(ex.bytes).subarray(n);
  }

  private writeBytes(bytes: Uint8Array): void {
    const n = this.socket!.write(bytes);
    if (n < 0) return this.destroy(new HttpConnectionError(`the connection to ${this.origin} is closed`));
    if (n < bytes.length) this.pendingOut = bytes.subarray(n);
  }
}

/** UTF-8 byte count of a string (Buffer.byteLength without its argument checks on the hot path). */
export function utf8Length(s: string): number {
  let n = s.length;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) continue;
    if (c < 0x800) n += 1;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      // A surrogate pair: 4 bytes for its 2 UTF-16 units.
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        n += 2;
        i++;
      } else n += 2;
    } else n += 2;
  }
  return n;
}

const socketHandlers: SocketHandler<Connection, "uint8array"> = {
  binaryType: "uint8array",
  open(socket) {
    socket.data.attach(socket as unknown as Socket<Connection>);
  },
  data(socket, chunk) {
    socket.data.onData(chunk);
  },
  drain(socket) {
    socket.data.onDrain();
  },
  end(socket) {
    socket.data.onClosed("the server closed the connection");
  },
  close(socket, err) {
    socket.data.onClosed(err?.message);
  },
  error(socket, err) {
    socket.data.onError(err);
  },
};

// Bun.connect is typed for the default "buffer" binary type only; plain Uint8Array chunks are what
// the parser wants (no Buffer wrapper per chunk), so widen the type here.
const handlers = socketHandlers as unknown as SocketHandler<Connection>;
