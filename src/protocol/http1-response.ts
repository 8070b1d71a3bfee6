// An incremental HTTP/1.1 response parser (RFC 9112) for the keep-alive client: status line and
// headers, then a body framed by Content-Length, chunked transfer coding, or the connection's
// end. Pure: bytes in, head / body chunks / end out; the caller owns the socket. 1xx interim
// responses are skipped; 204 and 304 have no body. Malformed input throws Http1ParseError.
import { ChunkSizeLine } from "./http1-chunk-size.ts";

export interface ResponseHead {
  status: number;
  /** Lower-cased names; repeated headers joined with ", ". */
  headers: Map<string, string>;
}

export interface ResponseSink {
  head(head: ResponseHead): void;
  /** A body chunk the sink may keep (a copy, not a view of the fed buffer). */
  body(chunk: Uint8Array): void;
  /** The message ended; keepAlive = the connection may carry the next request. */
  end(keepAlive: boolean): void;
}

export class Http1ParseError extends Error {}

const enum State {
  Head,
  Fixed,
  ChunkSize,
  ChunkData,
  ChunkDataEnd,
  Trailers,
  UntilClose,
  Done,
}

const MAX_HEAD_BYTES = 64 * 1024;
const MAX_LINE_BYTES = 8 * 1024;
const CR = 13;
const LF = 10;
const CRLF_CRLF = [CR, LF, CR, LF] as const;
/** Head bytes are ASCII in practice; anything else decodes to U+FFFD rather than failing. */
const HEAD_DECODER = new TextDecoder();

export class Http1ResponseParser {
  private state = State.Done;
  private head: Uint8Array[] = [];
  private headBytes = 0;
  private headMatched = 0;
  private lineLength = 0;
  private sawCR = false;
  private readonly sizeLine = new ChunkSizeLine();
  private remaining = 0;
  private keepAlive = true;
  /** Bytes of the current response seen so far (0 = nothing arrived yet). */
  received = 0;

  constructor(private readonly sink: ResponseSink) {}

  /** Expects the next response. */
  begin(): void {
    this.state = State.Head;
    this.head = [];
    this.headBytes = 0;
    this.headMatched = 0;
    this.received = 0;
  }

  get idle(): boolean {
    return this.state === State.Done;
  }

  feed(bytes: Uint8Array): void {
    if (bytes.length === 0) return;
    if (this.state === State.Done) throw new Http1ParseError(`${bytes.length} byte(s) arrived with no request outstanding`);
    this.received += bytes.length;
    let pos = 0;
    while (pos < bytes.length && !this.idle) pos = this.step(bytes, pos);
    if (pos < bytes.length) throw new Http1ParseError(`${bytes.length - pos} byte(s) after the end of the response`);
  }

  /** The connection ended: completes a body read until close, else the response is cut short. */
  eof(): void {
    if (this.state === State.Done) return;
    if (this.state === State.UntilClose) {
      this.state = State.Done;
      this.sink.end(false);
      return;
    }
    throw new Http1ParseError(this.received === 0 ? "the connection closed before any response" : "the connection closed in the middle of the response");
  }

  private step(b: Uint8Array, pos: number): number {
    switch (this.state) {
      case State.Head:
        return this.readHead(b, pos);
      case State.Fixed:
      case State.ChunkData: {
        const take = Math.min(this.remaining, b.length - pos);
        this.sink.body(copy(b, pos, pos + take));
        this.remaining -= take;
        if (this.remaining === 0) {
          if (this.state === State.Fixed) this.finish();
          else this.state = State.ChunkDataEnd;
        }
        return pos + take;
      }
      case State.UntilClose:
        this.sink.body(copy(b, pos, b.length));
        return b.length;
      default:
        return this.readLine(b, pos);
    }
  }

  private readHead(b: Uint8Array, pos: number): number {
    // CRLFCRLF may straddle chunks: the match so far is kept in headMatched.
    let end = -1;
    let matched = this.headMatched;
    for (let i = pos; i < b.length; i++) {
      const c = b[i];
      if (c === CRLF_CRLF[matched]) {
        if (++matched === 4) {
          end = i + 1;
          break;
        }
      } else matched = c === 13 ? 1 : 0;
    }
    this.headMatched = matched;
    const taken = end < 0 ? b.length : end;
    this.headBytes += taken - pos;
    if (this.headBytes > MAX_HEAD_BYTES) throw new Http1ParseError(`response head exceeds ${MAX_HEAD_BYTES} bytes`);
    // A copy while incomplete: the caller may reuse its buffer.
    this.head.push(end < 0 ? copy(b, pos, taken) : b.subarray(pos, taken));
    if (end < 0) return b.length;
    const text = this.head.length === 1 ? HEAD_DECODER.decode(this.head[0]) : HEAD_DECODER.decode(Buffer.concat(this.head));
    this.head = [];
    this.headBytes = 0;
    this.headMatched = 0;
    this.onHead(text.slice(0, text.length - 4));
    return end;
  }

  private onHead(text: string): void {
    // Walked with indexOf (no split array, no regex on the status line): this runs per response.
    let eol = text.indexOf("\r\n");
    if (eol < 0) eol = text.length;
    const minor = text.charCodeAt(7);
    const status = statusOf(text, eol);
    if (!text.startsWith("HTTP/1.") || (minor !== 48 && minor !== 49) || status < 100 || hasBareCrOrLf(text, 0, eol)) {
      throw new Http1ParseError(`not an HTTP/1.x status line: ${JSON.stringify(text.slice(0, Math.min(eol, 80)))}`);
    }
    const headers = new Map<string, string>();
    for (let at = eol + 2; at < text.length; ) {
      let end = text.indexOf("\r\n", at);
      if (end < 0) end = text.length;
      // Refused, not repaired: either could change how the body is framed (RFC 9112, sections 2.2 and 5.2),
      // and a proxy answers such a response with 502.
      const first = text.charCodeAt(at);
      if (first === 32 || first === 9) throw new Http1ParseError(`obsolete line folding in the response head: ${JSON.stringify(text.slice(at, Math.min(end, at + 80)))}`);
      if (hasBareCrOrLf(text, at, end)) throw new Http1ParseError(`a bare CR or LF in a header line: ${JSON.stringify(text.slice(at, Math.min(end, at + 80)))}`);
      const colon = text.indexOf(":", at);
      if (colon <= at || colon > end) throw new Http1ParseError(`malformed header line: ${JSON.stringify(text.slice(at, Math.min(end, at + 80)))}`);
      const name = text.slice(at, colon).trim().toLowerCase();
      const value = text.slice(colon + 1, end).trim();
      const prev = headers.get(name);
      headers.set(name, prev === undefined ? value : `${prev}, ${value}`);
      at = end + 2;
    }
    if (status >= 100 && status < 200) {
      // Interim (100 Continue, 103 Early Hints): the real response follows on the same connection.
      if (status === 101) throw new Http1ParseError("the server switched protocols (101), which this client does not speak");
      this.state = State.Head;
      return;
    }
    const connection = headers.get("connection")?.toLowerCase() ?? "";
    this.keepAlive = minor === 49 ? !connection.includes("close") : connection.includes("keep-alive");
    this.sink.head({ status, headers });
    if (status === 204 || status === 304) return this.finish();
    const te = headers.get("transfer-encoding");
    if (te !== undefined) {
      if (minor === 48) throw new Http1ParseError("transfer-encoding in an HTTP/1.0 response (faulty framing)");
      if (!/(?:^|,)\s*chunked\s*$/i.test(te)) throw new Http1ParseError(`unsupported transfer-encoding: ${te}`);
      // With a content-length as well, chunked wins, and the connection is not trusted again (RFC 9112, section 6.3).
      if (headers.has("content-length")) this.keepAlive = false;
      this.state = State.ChunkSize;
      this.startChunkSize();
      return;
    }
    const cl = headers.get("content-length");
    if (cl !== undefined) {
      if (!/^\d{1,15}$/.test(cl)) throw new Http1ParseError(`bad content-length: ${JSON.stringify(cl)}`);
      this.remaining = Number(cl);
      if (this.remaining === 0) return this.finish();
      this.state = State.Fixed;
      return;
    }
    this.keepAlive = false;
    this.state = State.UntilClose;
  }

  /**
   * Chunk-size lines (hex size, optional `;extension`), the CRLF after chunk data, and trailer
   * lines, read byte by byte: no string per line on the hot path.
   */
  private readLine(b: Uint8Array, pos: number): number {
    for (; pos < b.length; pos++) {
      const c = b[pos]!;
      if (this.sawCR) {
        if (c !== LF) throw new Http1ParseError("a line in the chunked body does not end in CRLF");
        this.sawCR = false;
        this.endLine();
        return pos + 1;
      }
      if (c === CR) {
        this.sawCR = true;
        continue;
      }
      if (c === LF) throw new Http1ParseError("a line in the chunked body does not end in CRLF");
      if (++this.lineLength > MAX_LINE_BYTES) throw new Http1ParseError("a chunk-size or trailer line exceeds 8 KiB");
      if (this.state === State.ChunkDataEnd) throw new Http1ParseError("chunk data is longer than its declared size");
      if (this.state !== State.ChunkSize) continue;
      const problem = this.sizeLine.take(c);
      if (problem) throw new Http1ParseError(problem);
    }
    return pos;
  }

  private endLine(): void {
    const empty = this.lineLength === 0;
    this.lineLength = 0;
    if (this.state === State.ChunkDataEnd) {
      this.state = State.ChunkSize;
      this.startChunkSize();
    } else if (this.state === State.ChunkSize) {
      const problem = this.sizeLine.ended();
      if (problem) throw new Http1ParseError(problem);
      this.remaining = this.sizeLine.size;
      this.state = this.remaining === 0 ? State.Trailers : State.ChunkData;
    } else if (empty) this.finish(); // the empty line after the (ignored) trailers
  }

  private startChunkSize(): void {
    this.sizeLine.reset();
    this.lineLength = 0;
    this.sawCR = false;
  }

  private finish(): void {
    this.state = State.Done;
    this.sink.end(this.keepAlive);
  }
}

/** A copy (Uint8Array's slice: a Buffer's slice would be a view). */
function copy(b: Uint8Array, start: number, end: number): Uint8Array {
  return Uint8Array.prototype.slice.call(b, start, end);
}

/** The 3-digit status after "HTTP/1.x " (followed by a space or the line's end), or -1. */
function statusOf(text: string, eol: number): number {
  if (text.charCodeAt(8) !== 32 || (eol !== 12 && text.charCodeAt(12) !== 32)) return -1;
  let status = 0;
  for (let i = 9; i < 12; i++) {
    const d = text.charCodeAt(i) - 48;
    if (!(d >= 0 && d <= 9)) return -1;
    status = status * 10 + d;
  }
  return status;
}


/** True when text[from, to) holds a CR or LF (a line ends only at CRLF here). */
function hasBareCrOrLf(text: string, from: number, to: number): boolean {
  const lf = text.indexOf("\n", from);
  if (lf !== -1 && lf < to) return true;
  const cr = text.indexOf("\r", from);
  return cr !== -1 && cr < to;
}
