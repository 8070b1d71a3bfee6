// An incremental HTTP/1.x request parser (RFC 9112), pure: bytes in; head, body chunks (Content-Length
// or chunked) and end out. It stops at each request's end so a server can hold pipelined bytes until
// it has answered. Malformed input throws Http1RequestError with the status to answer.
import { ChunkSizeLine } from "./http1-chunk-size.ts";
import { decodeRequestHead, Http1RequestError, type RequestHead } from "./http1-request-head.ts";

export { Http1RequestError, type RequestHead } from "./http1-request-head.ts";

export interface RequestSink {
  head(head: RequestHead): void;
  /** A body chunk: a view of the fed bytes (valid while the caller does not reuse its buffer). */
  body(chunk: Uint8Array): void;
  /** The request's last byte arrived; the parser waits for the next request's head. */
  end(): void;
}

export interface RequestLimits {
  /** Request line, headers and the empty line; past it 431 (or 414 for a request line alone). */
  maxHeadBytes: number;
  maxRequestLineBytes: number;
  maxHeaders: number;
  /** Body bytes (declared or received chunked); past it 413. */
  maxBodyBytes: number;
}

export const DEFAULT_REQUEST_LIMITS: RequestLimits = { maxHeadBytes: 16 * 1024, maxRequestLineBytes: 8 * 1024, maxHeaders: 100, maxBodyBytes: 64 * 1024 * 1024 };

const enum State {
  Head,
  Fixed,
  ChunkSize,
  ChunkData,
  ChunkDataEnd,
  Trailers,
}

const CR = 13;
const LF = 10;
const MAX_CHUNK_LINE_BYTES = 8 * 1024;

export class Http1RequestParser {
  private state = State.Head;
  private headParts: Uint8Array[] = [];
  private headBytes = 0;
  /** Bytes on the head's current line (CR not counted); 0 at a line's start. */
  private lineLength = 0;
  /** Only CR/LF seen so far: empty lines before a request line are skipped (RFC 9112, section 2.2). */
  private beforeRequestLine = true;
  private onFirstLine = true;
  private remaining = 0;
  private bodyBytes = 0;
  private sawCR = false;
  private readonly sizeLine = new ChunkSizeLine();
  private chunkLineLength = 0;
  private trailerBytes = 0;

  constructor(
    private readonly sink: RequestSink,
    private readonly limits: RequestLimits = DEFAULT_REQUEST_LIMITS,
  ) {}

  /** Bytes of a request have arrived and its last byte has not (a head in part, or a body). */
  get inMessage(): boolean {
    return this.state !== State.Head || !this.beforeRequestLine;
  }

  /** Between the head and the end: the body is still arriving. */
  get inBody(): boolean {
    return this.state !== State.Head;
  }

  /**
   * Parses from `pos`; returns where it stopped: `bytes.length`, or just after the end of a
   * request (the rest belongs to the next one, parsed by the next call).
   */
  feed(bytes: Uint8Array, pos = 0): number {
    while (pos < bytes.length) {
      const state = this.state;
      if (state === State.Head) {
        pos = this.readHead(bytes, pos);
        // A bodiless request ends with its head: stop there.
        if (this.justEnded) return this.consumeEnd(pos);
        continue;
      }
      if (state === State.Fixed || state === State.ChunkData) {
        const take = Math.min(this.remaining, bytes.length - pos);
        this.sink.body(bytes.subarray(pos, pos + take));
        this.remaining -= take;
        pos += take;
        if (this.remaining === 0) {
          if (state === State.ChunkData) this.state = State.ChunkDataEnd;
          else return this.finish(pos);
        }
        continue;
      }
      pos = this.readChunkLine(bytes, pos);
      if (this.justEnded) return this.consumeEnd(pos);
    }
    return pos;
  }

  private justEnded = false;

  private consumeEnd(pos: number): number {
    this.justEnded = false;
    return pos;
  }

  private readHead(b: Uint8Array, pos: number): number {
    let lineLength = this.lineLength;
    for (let i = pos; i < b.length; i++) {
      const c = b[i]!;
      if (c === LF) {
        if (this.beforeRequestLine) {
          // Still skipping empty lines before the request line.
          pos = i + 1;
          lineLength = 0;
          continue;
        }
        if (lineLength === 0) {
          this.lineLength = 0;
          return this.headEnded(b, pos, i + 1);
        }
        lineLength = 0;
        this.onFirstLine = false;
        continue;
      }
      if (c === CR) continue;
      if (this.beforeRequestLine) {
        this.beforeRequestLine = false;
        pos = i;
      }
      lineLength++;
      if (this.onFirstLine && lineLength > this.limits.maxRequestLineBytes) {
        throw new Http1RequestError(414, `the request line exceeds ${this.limits.maxRequestLineBytes} bytes`);
      }
    }
    this.lineLength = lineLength;
    if (!this.beforeRequestLine) this.keepHeadPart(b, pos, b.length);
    return b.length;
  }

  private keepHeadPart(b: Uint8Array, from: number, to: number): void {
    this.countHead(to - from);
    if (to > from) this.headParts.push(b.subarray(from, to));
  }

  private countHead(bytes: number): void {
    this.headBytes += bytes;
    if (this.headBytes > this.limits.maxHeadBytes) throw new Http1RequestError(431, `the request head exceeds ${this.limits.maxHeadBytes} bytes`);
  }

  private headEnded(b: Uint8Array, from: number, end: number): number {
    let head: RequestHead;
    if (this.headParts.length === 0) {
      // The whole head in this chunk (the usual case): decoded where it lies, nothing kept or copied.
      this.countHead(end - from);
      head = decodeRequestHead(b, this.limits, from, end);
    } else {
      this.keepHeadPart(b, from, end);
      const parts = this.headParts;
      this.headParts = [];
      head = decodeRequestHead(concat(parts, this.headBytes), this.limits);
    }
    this.headBytes = 0;
    this.beforeRequestLine = true;
    this.onFirstLine = true;
    this.sink.head(head);
    this.bodyBytes = 0;
    if (head.chunked) {
      this.state = State.ChunkSize;
      this.startChunkSize();
    } else if (head.contentLength > 0) {
      this.state = State.Fixed;
      this.remaining = head.contentLength;
    } else {
      this.justEnded = true;
      this.sink.end();
    }
    return end;
  }

  /**
   * Chunk-size lines (hex size, optional `;extension`), the CRLF after chunk data, and trailer
   * lines, byte by byte; CRLF only (a bare LF or CR in the framing is refused, not guessed at).
   */
  private readChunkLine(b: Uint8Array, pos: number): number {
    for (; pos < b.length; pos++) {
      const c = b[pos]!;
      if (this.sawCR) {
        if (c !== LF) throw new Http1RequestError(400, "a line of the chunked body does not end in CRLF");
        this.sawCR = false;
        this.endChunkLine();
        return pos + 1;
      }
      if (c === CR) {
        this.sawCR = true;
        continue;
      }
      if (c === LF) throw new Http1RequestError(400, "a line of the chunked body does not end in CRLF");
      if (this.state === State.ChunkDataEnd) throw new Http1RequestError(400, "chunk data is longer than its declared size");
      if (++this.chunkLineLength > MAX_CHUNK_LINE_BYTES) throw new Http1RequestError(400, "a chunk-size or trailer line exceeds 8 KiB");
      if (this.state === State.Trailers) {
        if (++this.trailerBytes > this.limits.maxHeadBytes) throw new Http1RequestError(431, `the trailers exceed ${this.limits.maxHeadBytes} bytes`);
        continue;
      }
      const problem = this.sizeLine.take(c);
      if (problem) throw new Http1RequestError(400, problem);
    }
    return pos;
  }

  private endChunkLine(): void {
    const empty = this.chunkLineLength === 0;
    this.chunkLineLength = 0;
    if (this.state === State.ChunkDataEnd) {
      this.state = State.ChunkSize;
      this.startChunkSize();
    } else if (this.state === State.ChunkSize) {
      const problem = this.sizeLine.ended();
      if (problem) throw new Http1RequestError(400, problem);
      this.remaining = this.sizeLine.size;
      this.bodyBytes += this.remaining;
      if (this.bodyBytes > this.limits.maxBodyBytes) throw new Http1RequestError(413, `the request body exceeds ${this.limits.maxBodyBytes} bytes`);
      if (this.remaining === 0) {
        this.state = State.Trailers;
        this.trailerBytes = 0;
      } else this.state = State.ChunkData;
    } else if (empty) {
      this.finish(0); // the empty line after the (ignored) trailers
      this.justEnded = true;
    }
  }

  private startChunkSize(): void {
    this.sizeLine.reset();
    this.chunkLineLength = 0;
    this.sawCR = false;
  }

  private finish(pos: number): number {
    this.state = State.Head;
    this.sink.end();
    return pos;
  }
}

function concat(parts: readonly Uint8Array[], size: number): Uint8Array {
  const out = new Uint8Array(size);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

