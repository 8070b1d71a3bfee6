// Writes an app's Response on an HTTP/1.x connection: a streamed type (SSE, NDJSON) chunk by chunk
// as the app gives it, read no faster than the socket drains; any other body whole, with a
// Content-Length, in one write with its head (why: docs/DECISIONS.md, HTTP server).
import { asksToClose, type BodyFraming, isBodilessStatus, responseHead } from "../../protocol/http1-response-head.ts";
import { openAiError } from "../../protocol/openai.ts";

/** The connection as the writer sees it. */
export interface ResponseOutput {
  /**
   * Writes bytes to the socket, or queues them; false when some wait for it to drain (stop
   * producing until drained()). `bytes` may be a view of a buffer the writer reuses after the
   * call: whatever the output keeps, it copies.
   */
  send(bytes: Uint8Array): boolean;
  /** Resolves once everything queued reached the socket, or the connection is gone. */
  drained(): Promise<void>;
  /** The client went away: nothing more will be sent. */
  readonly gone: boolean;
}

export interface ResponseContext {
  /** HEAD: the head as for GET, no body. */
  headOnly: boolean;
  /** 0 for an HTTP/1.0 client, 1 for HTTP/1.1. */
  minor: number;
  /** The request allows the connection to carry another (its own and the server's say). */
  keepAlive: boolean;
  date: string;
  /** The writer's body reader, so the connection can cancel it when the client leaves. */
  reader?: { cancel(reason?: unknown): Promise<void> };
}

/** keep-alive: the connection carries the next request; close: end it after this; cut: the body broke off, drop it. */
export type WriteOutcome = "keep-alive" | "close" | "cut";

type ReadResult = { done: true; value?: undefined } | { done: false; value: unknown };

const NONE: BodyFraming = { kind: "none" };
const CHUNKED: BodyFraming = { kind: "chunked" };
const UNTIL_CLOSE: BodyFraming = { kind: "until-close" };
const LAST_CHUNK = new TextEncoder().encode("0\r\n\r\n");
const CRLF = [13, 10] as const;
const ENCODER = new TextEncoder();
/** Past this much gathered at once a body goes out as a stream (also ends a stream that never stops producing). */
const GATHER_LIMIT = 1024 * 1024;

export async function writeResponse(out: ResponseOutput, res: Response, ctx: ResponseContext): Promise<WriteOutcome> {
  const status = res.status;
  let keepAlive = ctx.keepAlive && !asksToClose(res.headers);
  if (isBodilessStatus(status)) {
    // A body given with a status that has none is not sent; a stream's producer is told so.
    if (res.body !== null) void res.body.cancel().catch(() => {});
    out.send(withHead(res, ctx, NONE, keepAlive, [], 0));
    return keepAlive ? "keep-alive" : "close";
  }
  if (!isStreamedType(res.headers.get("content-type"))) {
    // Read whole: a body held in memory resolves at once, without the cost of a stream and a reader.
    let whole: Uint8Array;
    try {
      whole = await res.bytes();
    } catch (err) {
      // The app's body failed before a byte went out: an answer that says so.
      res = appBodyFailed(err);
      whole = await res.bytes();
    }
    out.send(withHead(res, ctx, { kind: "length", length: whole.length }, keepAlive, ctx.headOnly ? [] : [whole], ctx.headOnly ? 0 : whole.length));
    return keepAlive ? "keep-alive" : "close";
  }
  const body = res.body;
  if (body === null) {
    out.send(withHead(res, ctx, { kind: "length", length: 0 }, keepAlive, [], 0));
    return keepAlive ? "keep-alive" : "close";
  }
  const reader = body.getReader() as unknown as { read(): Promise<ReadResult>; cancel(reason?: unknown): Promise<void> };
  ctx.reader = reader;
  try {
    // What the body gives at once: a body held in memory comes whole (read synchronously or
    // within a few microtasks); a stream still producing is waiting for its producer by then.
    const parts: Uint8Array[] = [];
    let size = 0;
    let next: Promise<ReadResult> | undefined;
    for (;;) {
      const read = reader.read();
      let result = Bun.peek(read) as ReadResult | Promise<unknown> | typeof STILL_WAITING;
      if (result === read) result = await soon(read);
      else if (Bun.peek.status(read) === "rejected") await read; // throws the stream's error
      if (result === STILL_WAITING) {
        next = read;
        break;
      }
      const r = result as ReadResult;
      if (r.done) {
        out.send(withHead(res, ctx, { kind: "length", length: size }, keepAlive, ctx.headOnly ? [] : parts, ctx.headOnly ? 0 : size));
        return keepAlive ? "keep-alive" : "close";
      }
      const chunk = bytesOf(r.value);
      if (chunk.length > 0) {
        parts.push(chunk);
        size += chunk.length;
      }
      if (size > GATHER_LIMIT) break;
    }
    if (ctx.headOnly) {
      void reader.cancel().catch(() => {});
      out.send(withHead(res, ctx, NONE, keepAlive, [], 0));
      return keepAlive ? "keep-alive" : "close";
    }
    const chunked = ctx.minor === 1;
    if (!chunked) keepAlive = false; // HTTP/1.0 has no chunking: the body ends with the connection
    // Framed apart from the scratch buffer: withHead assembles in it next.
    const first: Uint8Array[] = chunked ? parts.map((p) => Uint8Array.prototype.slice.call(frame(p))) : parts;
    let flowing = out.send(withHead(res, ctx, chunked ? CHUNKED : UNTIL_CLOSE, keepAlive, first, first.reduce((n, p) => n + p.length, 0)));
    for (;;) {
      if (!flowing) await out.drained();
      if (out.gone) {
        void reader.cancel().catch(() => {});
        return "cut";
      }
      const r = await (next ?? reader.read());
      next = undefined;
      if (r.done) break;
      if (out.gone) {
        void reader.cancel().catch(() => {});
        return "cut";
      }
      const chunk = bytesOf(r.value);
      if (chunk.length === 0) continue; // an empty chunk would end a chunked body
      flowing = out.send(chunked ? frame(chunk) : chunk);
    }
    if (chunked) out.send(LAST_CHUNK);
    return keepAlive ? "keep-alive" : "close";
  } catch {
    // The app's stream failed: the client sees the body end without its last chunk (a reset).
    return "cut";
  }
}

function appBodyFailed(err: unknown): Response {
  return openAiError(500, `internal error: the response body failed: ${err instanceof Error ? err.message : String(err)}`);
}

/** Content types whose bodies are streamed (SSE, NDJSON): the only ones read chunk by chunk. */
function isStreamedType(type: string | null): boolean {
  if (type === null) return false;
  const t = type.trimStart().toLowerCase();
  return t.startsWith("text/event-stream") || t.startsWith("application/x-ndjson");
}

/** The head and the body's first parts as one buffer (one write, one syscall), in the scratch buffer when they fit. */
function withHead(res: Response, ctx: ResponseContext, framing: BodyFraming, keepAlive: boolean, parts: readonly Uint8Array[], size: number): Uint8Array {
  const connection = keepAlive ? (ctx.minor === 0 ? "keep-alive" : undefined) : "close";
  const head = responseHead(res.status, res.headers, ctx.date, framing, connection);
  const out = outBuffer(head.length + size);
  out.write(head, 0, "latin1");
  let at = head.length;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/**
 * Where a write is assembled: a scratch buffer reused by every response (writes are synchronous
 * and the output copies what it keeps), so a small answer or chunk allocates no buffer of its own.
 */
const SCRATCH_BYTES = 64 * 1024;
const scratch = Buffer.allocUnsafe(SCRATCH_BYTES);

function outBuffer(size: number): Buffer {
  return size <= SCRATCH_BYTES ? scratch.subarray(0, size) : Buffer.allocUnsafe(size);
}

/** One chunk of a chunked body: hex size, CRLF, data, CRLF (in the scratch buffer when it fits). */
function frame(chunk: Uint8Array): Uint8Array {
  const size = chunk.length.toString(16);
  const out = outBuffer(size.length + chunk.length + 4);
  out.write(size, 0, "latin1");
  out[size.length] = CRLF[0];
  out[size.length + 1] = CRLF[1];
  out.set(chunk, size.length + 2);
  out[out.length - 2] = CRLF[0];
  out[out.length - 1] = CRLF[1];
  return out;
}

function bytesOf(value: unknown): Uint8Array {
  if (value instanceof Uint8Array) return value;
  if (typeof value === "string") return ENCODER.encode(value);
  if (ArrayBuffer.isView(value)) return new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
  if (value instanceof ArrayBuffer) return new Uint8Array(value);
  throw new TypeError(`a response body chunk must be bytes or a string, got ${typeof value}`);
}

const STILL_WAITING = Symbol("still waiting");
/** Microtask hops a read may take and still count as given at once (an in-memory body's second read takes 1–2). */
const SOON_HOPS = 8;

/**
 * The read's result if it settles within a few microtask hops, else STILL_WAITING: a body held in
 * memory gives all it has that soon, a stream waits for its producer. Only the framing depends on it
 * (a Content-Length, or chunked), never what is sent.
 */
function soon(read: Promise<ReadResult>): Promise<ReadResult | typeof STILL_WAITING> {
  return new Promise((resolve, reject) => {
    read.then(resolve, reject);
    let hops = 0;
    const hop = (): void => {
      if (++hops >= SOON_HOPS) resolve(STILL_WAITING);
      else queueMicrotask(hop);
    };
    queueMicrotask(hop);
  });
}
