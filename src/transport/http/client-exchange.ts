// One request and its response as the keep-alive client carries them (keepalive-client.ts): the
// response head the caller awaits, the body chunks it reads (queued until read), and how either
// side ends it — the server's end, a connection failure, or the caller's abort or cancel.
import type { ResponseHead, ResponseSink } from "../../protocol/http1-response.ts";

/** Told as a response's body arrives: progress() at each chunk, stop() once the whole response is in. */
export interface ResponseWatch {
  progress(): void;
  stop(): void;
}

/** A request on its way: its response once the head arrives, and a way to abort it. */
export interface PendingRequest {
  readonly response: Promise<ClientResponse>;
  /** Fails the request with `reason`; an unfinished response closes its connection. */
  abort(reason: unknown): void;
}

/** A response whose head has arrived; the body is read chunk by chunk. */
export interface ClientResponse {
  readonly status: number;
  readonly headers: ReadonlyMap<string, string>;
  /** The next body chunk; undefined at the end. Rejects when the connection fails or the request is aborted. */
  read(): Promise<Uint8Array | undefined>;
  /** Stops reading: an unfinished response closes its connection. */
  cancel(): void;
}

export class HttpConnectionError extends Error {}

export class Exchange implements ClientResponse, ResponseSink, PendingRequest {
  status = 0;
  headers: ReadonlyMap<string, string> = new Map();
  bytes = "";
  byteLength = 0;
  /** GET: safe to send again when the server closed before answering. */
  idempotent = false;
  /** Some of the request reached a socket (a POST past this point is never sent again). */
  written = false;
  watch: ResponseWatch | undefined;
  /** The connection carrying it, while one does (closed when the exchange is aborted mid-response). */
  conn: { destroy(err: unknown): void } | undefined;
  readonly response: Promise<ClientResponse>;
  private onDone: (() => void) | undefined;
  private done = false;
  private resolveHead!: (r: ClientResponse) => void;
  private rejectHead!: (e: unknown) => void;
  private gotHead = false;
  private chunks: Uint8Array[] = [];
  private ended = false;
  private error: unknown;
  private waiter: { resolve: (c: Uint8Array | undefined) => void; reject: (e: unknown) => void } | undefined;

  constructor() {
    this.response = new Promise((resolve, reject) => {
      this.resolveHead = resolve;
      this.rejectHead = reject;
    });
  }

  head(h: ResponseHead): void {
    this.status = h.status;
    this.headers = h.headers;
    this.gotHead = true;
    this.resolveHead(this);
  }

  body(chunk: Uint8Array): void {
    this.watch?.progress();
    if (this.waiter) {
      const w = this.waiter;
      this.waiter = undefined;
      w.resolve(chunk);
    } else this.chunks.push(chunk);
  }

  end(): void {
    this.ended = true;
    this.watch?.stop();
    this.detach();
    if (this.waiter && this.chunks.length === 0) {
      const w = this.waiter;
      this.waiter = undefined;
      w.resolve(undefined);
    }
  }

  read(): Promise<Uint8Array | undefined> {
    if (this.chunks.length > 0) return Promise.resolve(this.chunks.shift());
    if (this.error !== undefined) return Promise.reject(this.error);
    if (this.ended) return Promise.resolve(undefined);
    return new Promise((resolve, reject) => (this.waiter = { resolve, reject }));
  }

  cancel(): void {
    this.chunks = [];
    if (!this.ended && this.error === undefined) this.abort(new HttpConnectionError("the response was cancelled"));
  }

  /** The request failed before or during the response. */
  fail(err: unknown): void {
    if (this.ended || this.error !== undefined) return;
    this.error = err;
    this.detach();
    if (!this.gotHead) this.rejectHead(err);
    if (this.waiter) {
      const w = this.waiter;
      this.waiter = undefined;
      w.reject(err);
    }
  }

  abort(reason: unknown): void {
    const conn = this.conn;
    this.fail(reason);
    // The connection's state is unknown mid-response: close it (the server sees the request go away).
    conn?.destroy(undefined);
  }

  /** Runs `fn` once when the exchange ends either way (request() unhooks its signal here). */
  whenDone(fn: () => void): void {
    if (this.done) fn();
    else this.onDone = fn;
  }

  private detach(): void {
    this.conn = undefined;
    this.done = true;
    const fn = this.onDone;
    this.onDone = undefined;
    fn?.();
  }
}
