// Writes an app's Response on an HTTP/1.x connection: a streamed type (SSE, NDJSON) without a declared
// length chunk by chunk as the app gives it, read no faster than the socket drains; a pushed body
// (DirectResponse) written as its producer pushes it; any other body whole, with a Content-Length,
// in one write with its head (why: docs/DECISIONS.md, HTTP server).
import { asksToClose, type BodyFraming, type HeadFields, isBodilessStatus, responseHead } from "../../protocol/http1-response-head.ts";
import { DirectResponse, type DirectSink, type DirectSource } from "./direct-response.ts";
import { wholeBodyOf, type WholeResponse } from "./whole-response.ts";

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

/**
 * keep-alive: the connection carries the next request; close: end it after this; cut: the body
 * broke off mid-way, end the connection without its last chunk (the client sees it end early);
 * reset: close at once (a body that failed before a byte went out, or one running until close,
 * where an orderly end would look complete).
 */
export type WriteOutcome = "keep-alive" | "close" | "cut" | "reset";

type ReadResult = { done: true; value?: undefined } | { done: false; value: unknown };

const NONE: BodyFraming = { kind: "none" };
const CHUNKED: BodyFraming = { kind: "chunked" };
const UNTIL_CLOSE: BodyFraming = { kind: "until-close" };
const LAST_CHUNK = new TextEncoder().encode("0\r\n\r\n");
const CRLF = [13, 10] as const;
const ENCODER = new TextEncoder();
/** Past this much gathered at once a body goes out as a stream (also ends a stream that never stops producing). */
const GATHER_LIMIT = 1024 * 1024;

/** Writes `res`; an answer sent in full at once (bodiless, or a whole body in hand) returns its outcome without a promise. */
export function writeResponse(out: ResponseOutput, res: Response, ctx: ResponseContext): WriteOutcome | Promise<WriteOutcome> {
  const whole = isBodilessStatus(res.status) ? undefined : wholeBodyOf(res);
  if (whole !== undefined) {
    const fields = (res as WholeResponse).headFields();
    return sendBytes(out, res.status, fields, ctx, ctx.keepAlive && !asksToClose(fields), whole);
  }
  if (res instanceof DirectResponse && !isBodilessStatus(res.status)) {
    const source = res.take();
    if (source !== undefined) {
      const fields = res.headFields();
      return writePushed(out, res.status, fields, ctx, ctx.keepAlive && !asksToClose(fields), source);
    }
  }
  const keepAlive = ctx.keepAlive && !asksToClose(res.headers);
  if (isBodilessStatus(res.status)) {
    // A body given with a status that has none is not sent; a stream's producer is told so.
    if (res.body !== null) void res.body.cancel().catch(() => {});
    out.send(withHead(res.status, res.headers, ctx, NONE, keepAlive, [], 0));
    return keepAlive ? "keep-alive" : "close";
  }
  if (!isStreamedType(res.headers.get("content-type")) || res.headers.has("content-length")) {
    // Read whole (any type but the streamed ones, or one whose app declared its length): a body held
    // in memory resolves at once, without the cost of a stream and a reader. The length sent is the
    // body's own, whatever the app declared.
    return sendWhole(out, res, ctx, keepAlive);
  }
  return writeBody(out, res, ctx, keepAlive);
}

async function writeBody(out: ResponseOutput, res: Response, ctx: ResponseContext, keepAlive: boolean): Promise<WriteOutcome> {
  const body = res.body;
  if (body === null) {
    out.send(withHead(res.status, res.headers, ctx, { kind: "length", length: 0 }, keepAlive, [], 0));
    return keepAlive ? "keep-alive" : "close";
  }
  const reader = body.getReader() as unknown as { read(): Promise<ReadResult>; cancel(reason?: unknown): Promise<void> };
  ctx.reader = reader;
  let sent: BodyFraming | undefined; // the framing, once the head is out
  // What the body gives at once: a body held in memory comes whole (read synchronously or
  // within a few microtasks); a stream still producing is waiting for its producer by then.
  const parts: Uint8Array[] = [];
  let size = 0;
  const chunked = ctx.minor === 1;
  try {
    let next: Promise<ReadResult> | undefined;
    for (;;) {
      const read = reader.read();
      // Given at once (synchronously, or within a few microtask hops: an in-memory body's last read
      // takes 1–2), or still waiting for its producer. Only the framing depends on it, never what is sent.
      for (let hop = 0; hop < SOON_HOPS && Bun.peek.status(read) === "pending"; hop++) await null;
      if (Bun.peek.status(read) === "rejected") await read; // throws the stream's error
      const result = Bun.peek(read) as ReadResult | Promise<ReadResult>;
      if (result === read) {
        next = read;
        next.catch(() => {}); // handled: a failure is read from it below, maybe after a wait for drain
        break;
      }
      const r = result as ReadResult;
      if (r.done) {
        out.send(withHead(res.status, res.headers, ctx, { kind: "length", length: size }, keepAlive, ctx.headOnly ? [] : parts, ctx.headOnly ? 0 : size));
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
      out.send(withHead(res.status, res.headers, ctx, NONE, keepAlive, [], 0));
      return keepAlive ? "keep-alive" : "close";
    }
    if (!chunked) keepAlive = false; // HTTP/1.0 has no chunking: the body ends with the connection
    // Framed apart from the scratch buffer: withHead assembles in it next.
    const first: Uint8Array[] = chunked ? parts.map((p) => Uint8Array.prototype.slice.call(frame(p))) : parts;
    sent = chunked ? CHUNKED : UNTIL_CLOSE;
    let flowing = out.send(withHead(res.status, res.headers, ctx, sent, keepAlive, first, first.reduce((n, p) => n + p.length, 0)));
    for (;;) {
      if (!flowing) await out.drained();
      if (out.gone) {
        void reader.cancel().catch(() => {});
        return "reset";
      }
      const r = await (next ?? reader.read());
      next = undefined;
      if (r.done) break;
      if (out.gone) {
        void reader.cancel().catch(() => {});
        return "reset";
      }
      const chunk = bytesOf(r.value);
      if (chunk.length === 0) continue; // an empty chunk would end a chunked body
      flowing = out.send(chunked ? frame(chunk) : chunk);
    }
    if (chunked) out.send(LAST_CHUNK);
    return keepAlive ? "keep-alive" : "close";
  } catch {
    // What came before the failure goes out first, whether or not the head had left by then.
    if (sent === undefined) return ctx.headOnly ? "reset" : failedBeforeHead(out, res.status, res.headers, ctx, keepAlive, parts);
    // Mid-body: the client must see it broken off. Chunked, an orderly end without the last chunk
    // says so and lets what was sent arrive; running until close, only a reset does.
    return sent === CHUNKED ? "cut" : "reset";
  }
}

/**
 * A pushed body: what the source writes during its pull goes out with the head (with its length
 * when it also closed by then), the rest framed as it is written. Same outcomes as a streamed body.
 */
function writePushed(out: ResponseOutput, status: number, fields: HeadFields, ctx: ResponseContext, keepAlive: boolean, source: DirectSource): WriteOutcome | Promise<WriteOutcome> {
  if (ctx.headOnly) {
    source.cancel();
    out.send(withHead(status, fields, ctx, NONE, keepAlive, [], 0));
    return keepAlive ? "keep-alive" : "close";
  }
  const chunked = ctx.minor === 1;
  const parts: Uint8Array[] = [];
  let size = 0;
  let headSent = false;
  let closed = false;
  let ended: ((outcome: WriteOutcome) => void) | undefined;
  const finish = (outcome: WriteOutcome): void => {
    if (closed) return;
    closed = true;
    ended?.(outcome);
  };
  const sink: DirectSink = {
    copiesChunks: true,
    write(chunk) {
      if (closed || out.gone) return;
      const bytes = bytesOf(chunk);
      if (bytes.length === 0) return; // an empty chunk would end a chunked body
      if (!headSent) {
        parts.push(Uint8Array.prototype.slice.call(bytes)); // a view the source reuses: copied until the head goes
        size += bytes.length;
      } else out.send(chunked ? frame(bytes) : bytes);
    },
    flush() {},
    close() {
      if (closed) return;
      if (headSent && chunked && !out.gone) out.send(LAST_CHUNK);
      finish(out.gone ? "reset" : keepAlive ? "keep-alive" : "close");
    },
  };
  ctx.reader = {
    cancel: async () => {
      source.cancel();
      finish("reset");
    },
  };
  let pulled: void | Promise<void>;
  try {
    pulled = source.pull(sink);
  } catch {
    closed = true;
    return failedBeforeHead(out, status, fields, ctx, keepAlive, parts);
  }
  if (closed) {
    // Written whole during the pull: one write with its length.
    out.send(withHead(status, fields, ctx, { kind: "length", length: size }, keepAlive, parts, size));
    return keepAlive ? "keep-alive" : "close";
  }
  if (!chunked) keepAlive = false; // HTTP/1.0 has no chunking: the body ends with the connection
  const framing = chunked ? CHUNKED : UNTIL_CLOSE;
  const first: Uint8Array[] = chunked ? parts.map((p) => Uint8Array.prototype.slice.call(frame(p))) : parts;
  out.send(withHead(status, fields, ctx, framing, keepAlive, first, first.reduce((n, p) => n + p.length, 0)));
  headSent = true;
  parts.length = 0;
  return new Promise<WriteOutcome>((resolve) => {
    ended = resolve;
    if (pulled instanceof Promise) {
      // The pull settling ends the body too: resolved as a close, rejected as a break (chunked: an
      // orderly end without the last chunk says so; running until close, only a reset does).
      pulled.then(
        () => sink.close(),
        () => finish(framing === CHUNKED && !out.gone ? "cut" : "reset"),
      );
    }
  });
}

/** A pushed or streamed body that failed before its head went out: what came goes out, then the break shows. */
function failedBeforeHead(out: ResponseOutput, status: number, fields: HeadFields, ctx: ResponseContext, keepAlive: boolean, parts: readonly Uint8Array[]): WriteOutcome {
  // Nothing went out and nothing came: the connection is dropped, as Bun.serve drops it (the mocker's cut fault relies on it).
  if (parts.length === 0) return "reset";
  const chunked = ctx.minor === 1;
  const first = chunked ? parts.map((p) => Uint8Array.prototype.slice.call(frame(p))) : parts;
  out.send(withHead(status, fields, ctx, chunked ? CHUNKED : UNTIL_CLOSE, chunked && keepAlive, first, first.reduce((n, p) => n + p.length, 0)));
  return chunked ? "cut" : "reset";
}

/**
 * The body read whole, then sent with its head in one write; a body that fails drops the connection
 * (nothing went out). A body already in memory reads at once: then without a promise.
 */
function sendWhole(out: ResponseOutput, res: Response, ctx: ResponseContext, keepAlive: boolean): WriteOutcome | Promise<WriteOutcome> {
  let read: Promise<Uint8Array>;
  try {
    read = res.bytes();
  } catch {
    return "reset";
  }
  if (Bun.peek.status(read) === "fulfilled") return sendBytes(out, res.status, res.headers, ctx, keepAlive, Bun.peek(read) as Uint8Array);
  return read.then(
    (whole) => sendBytes(out, res.status, res.headers, ctx, keepAlive, whole),
    () => "reset" as const,
  );
}

/** A whole body with its head, in one write. */
function sendBytes(out: ResponseOutput, status: number, fields: HeadFields, ctx: ResponseContext, keepAlive: boolean, whole: Uint8Array): WriteOutcome {
  out.send(withHead(status, fields, ctx, { kind: "length", length: whole.length }, keepAlive, ctx.headOnly ? [] : [whole], ctx.headOnly ? 0 : whole.length));
  return keepAlive ? "keep-alive" : "close";
}

/** Content types whose bodies are streamed (SSE, NDJSON): the only ones read chunk by chunk. */
function isStreamedType(type: string | null): boolean {
  if (type === null) return false;
  const t = type.trimStart().toLowerCase();
  return t.startsWith("text/event-stream") || t.startsWith("application/x-ndjson");
}

/** The head and the body's first parts as one buffer (one write, one syscall), in the scratch buffer when they fit. */
function withHead(status: number, fields: HeadFields, ctx: ResponseContext, framing: BodyFraming, keepAlive: boolean, parts: readonly Uint8Array[], size: number): Uint8Array {
  const connection = keepAlive ? (ctx.minor === 0 ? "keep-alive" : undefined) : "close";
  const head = responseHead(status, fields, ctx.date, framing, connection);
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

/** Microtask hops a read may take and still count as given at once. */
const SOON_HOPS = 4;
