// The streamed body of one generation, written fast: /v1/generate's NDJSON token lines formatted
// straight into a byte buffer, or the worker API's SSE chunks (a TextFormat), written once per
// event-loop turn to the body's sink (one socket write per request per turn, not a string, an
// encode and a write per token). It is a pushed body's source: the server writes what it pushes
// straight to the socket; any other reader gets Bun's direct ReadableStream over it.
import { summaryLine, TOKEN_LINE_PREFIX, tokenLine, type GenerateSummary } from "../../protocol/generate.ts";
import type { DirectSink, DirectSource } from "../../transport/http/direct-response.ts";

/** Where a request's output goes; calls arrive from the live loop as steps complete. */
export interface TokenSink {
  /** `ids` is only valid during the call (the caller reuses the array). */
  tokens(ids: readonly number[]): void;
  finish(summary: GenerateSummary): void;
}

/** A body other than NDJSON: the text of a batch of tokens, of the end, and of a heartbeat. */
export interface TextFormat {
  tokens(ids: readonly number[]): string;
  finish(summary: GenerateSummary): string;
  /** Sent while no output has come yet; readers of the format must skip it. */
  readonly heartbeat: string;
}

const PREFIX = new TextEncoder().encode(TOKEN_LINE_PREFIX);
/**
 * A request still queued or in prefill sends a blank line (a heartbeat, skipped by readers) about
 * this often, its head going out with the first one: the frontend's stall watch then tells a
 * worker that stopped from one that is busy, however long the queue.
 */
export const HEARTBEAT_MS = 1000;
const BLANK_LINE = 0x0a;

/** One timer for every stream still waiting for its first output. */
const waiting = new Set<TokenStream>();
let ticker: ReturnType<typeof setInterval> | undefined;
function watchForHeartbeat(s: TokenStream): void {
  waiting.add(s);
  if (ticker !== undefined) return;
  // Ticks twice per period; each stream beats once it has waited a whole period (not at the first tick, whenever that falls).
  ticker = setInterval(() => {
    const now = performance.now();
    for (const w of waiting) if (now - w.lastBeatMs >= HEARTBEAT_MS) w.heartbeat(now);
    if (waiting.size === 0) {
      clearInterval(ticker);
      ticker = undefined;
    }
  }, HEARTBEAT_MS / 2);
  ticker.unref(); // waiting requests keep their server alive, not this timer
}
/** Longest token line: prefix, 10 digits (u32), `}` and `\n`. */
const MAX_LINE_BYTES = PREFIX.length + 10 + 2;
const INITIAL_BYTES = 512;

export class TokenStream implements TokenSink, DirectSource {
  /** The body's writer, from its one pull; the body stays open until the request ends. */
  private controller: DirectSink | undefined;
  // Its own ArrayBuffer: writes go through subarray views, which would first move a small typed array out of the collector's heap.
  private buf = new Uint8Array(new ArrayBuffer(INITIAL_BYTES));
  private len = 0;
  private flushQueued = false;
  /** Finished or cancelled: nothing more is written. */
  private done = false;
  /** The request ended (finished, cancelled or cut); the stream's pull waits for it, made only when a stream is. */
  private hasEnded = false;
  private wakeEnded: (() => void) | undefined;
  private finished = false;
  /** cut(): the body ends with a connection reset instead of its last chunk. */
  private wasCut = false;
  private outputStarted!: () => void;
  /** Resolves at the first token, the summary or a cancel, whichever comes first. */
  readonly firstOutput = new Promise<void>((resolve) => (this.outputStarted = resolve));

  /** `onCancel` runs once if the client goes away before the summary line; without `format`, NDJSON. */
  constructor(
    private readonly onCancel: () => void,
    private readonly format?: TextFormat,
  ) {
    watchForHeartbeat(this);
  }

  /** The body's one pull: what is buffered goes out, and the rest as the live loop writes it, until the request ends. */
  pull(sink: DirectSink): Promise<void> {
    this.controller = sink;
    this.flush();
    if (this.wasCut) return resetAfterWrites();
    if (this.done) this.end();
    // Pending until the request ends: the body stays open for the live loop to write to.
    const ended = this.hasEnded ? Promise.resolve() : new Promise<void>((resolve) => (this.wakeEnded = resolve));
    return ended.then(() => (this.wasCut ? resetAfterWrites() : undefined));
  }

  private ended(): void {
    this.hasEnded = true;
    this.wakeEnded?.();
  }

  /** When the stream was made, then its last heartbeat (performance.now). */
  lastBeatMs = performance.now();

  /** A blank line while no output has come yet (the head goes out with the first one). */
  heartbeat(now: number): void {
    if (this.done || this.hasOutput) {
      waiting.delete(this);
      return;
    }
    this.lastBeatMs = now;
    this.outputStarted();
    if (this.format) this.appendText(this.format.heartbeat);
    else {
      this.reserve(1);
      this.buf[this.len++] = BLANK_LINE;
    }
    this.flush();
  }

  /** Tokens, the summary or an end came: heartbeats stop. */
  private hasOutput = false;

  tokens(ids: readonly number[]): void {
    if (this.done) return;
    this.started();
    if (this.format) this.appendText(this.format.tokens(ids));
    else for (let i = 0; i < ids.length; i++) this.appendTokenLine(ids[i]!);
    if (!this.flushQueued) {
      this.flushQueued = true;
      queueMicrotask(this.flush);
    }
  }

  finish(summary: GenerateSummary): void {
    if (this.done) return;
    this.done = true;
    this.finished = true;
    this.started();
    this.appendText(this.format ? this.format.finish(summary) : summaryLine(summary));
    if (this.controller) {
      this.flush();
      this.end();
    }
  }

  /** The client went away (request aborted or body cancelled): drop output, tell the pool once. */
  cancel(): void {
    if (this.done) return;
    this.done = true;
    this.len = 0;
    this.ended();
    this.started();
    this.onCancel();
  }

  /**
   * The cut_stream fault: what was written goes out, then the connection is reset (the client sees
   * a body that ends without its last chunk). Nothing more is written; the caller frees the request.
   */
  cut(): void {
    if (this.done) return;
    this.done = true;
    this.wasCut = true;
    this.started();
    this.flush();
    this.ended();
  }

  /**
   * The whole body when the request finished before the response was handed to the server (a
   * short request at high speedup): sent with a Content-Length in one write, with none of the
   * chunked stream's per-response work. Undefined while the request is still running.
   */
  takeWholeBody(): Uint8Array | undefined {
    if (!this.finished || this.controller) return undefined;
    // A view, not a copy: nothing is written to the buffer once the request finished.
    const bytes = this.buf.subarray(0, this.len);
    this.len = 0;
    this.ended();
    return bytes;
  }

  private started(): void {
    this.hasOutput = true;
    waiting.delete(this);
    this.outputStarted();
  }

  private readonly flush = (): void => {
    this.flushQueued = false;
    const c = this.controller;
    if (this.len === 0 || !c) return;
    // A view when the sink copies what it keeps (the server's); else a copy: Bun's controller may hold the chunk after write() returns.
    c.write(c.copiesChunks ? this.buf.subarray(0, this.len) : this.buf.slice(0, this.len));
    c.flush();
    this.len = 0;
  };

  private end(): void {
    this.controller?.close();
    this.ended();
  }

  /** Appends exactly tokenLine(id): `{"token_id":` + decimal digits + `}\n`, as bytes. */
  private appendTokenLine(id: number): void {
    if (!Number.isInteger(id) || id < 0 || id > 0xffff_ffff) {
      this.appendText(tokenLine(id)); // not a u32 (never from the engine): format it the slow way
      return;
    }
    this.reserve(MAX_LINE_BYTES);
    const b = this.buf;
    let p = this.len;
    b.set(PREFIX, p);
    p += PREFIX.length;
    let digits = 1;
    for (let x = id; x >= 10; x = Math.floor(x / 10)) digits++;
    let x = id;
    for (let i = p + digits - 1; i >= p; i--) {
      const q = Math.floor(x / 10);
      b[i] = 0x30 + (x - q * 10);
      x = q;
    }
    p += digits;
    b[p++] = 0x7d; // }
    b[p++] = 0x0a; // \n
    this.len = p;
  }

  /** UTF-8 straight into the buffer (an SSE chunk per token: no array per chunk). */
  private appendText(text: string): void {
    this.reserve(text.length * 3);
    this.len += encoder.encodeInto(text, this.buf.subarray(this.len)).written;
  }

  private reserve(bytes: number): void {
    if (this.len + bytes <= this.buf.length) return;
    const grown = new Uint8Array(new ArrayBuffer(Math.max(this.buf.length * 2, this.len + bytes)));
    grown.set(this.buf.subarray(0, this.len));
    this.buf = grown;
  }
}

const encoder = new TextEncoder();

/** A body that resets the connection at once: a whole answer cut by the cut_stream fault. */
export function resetBody(): ReadableStream<Uint8Array> {
  return new ReadableStream({ type: "direct", pull: () => resetAfterWrites() }) as ReadableStream<Uint8Array>;
}

/**
 * Rejecting the body's pull with no reason makes Bun drop the connection (no last chunk) without
 * logging an error; a timer turn first, or Bun discards what was just flushed.
 */
function resetAfterWrites(): Promise<never> {
  return new Promise((_, reject) => setTimeout(() => reject(undefined), 0));
}
