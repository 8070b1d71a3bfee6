// An incremental HTTP/1.1 response parser (RFC 9112) for the keep-alive client: status line and
// headers, then a body framed by Content-Length, chunked transfer coding, or the connection's
// end. Pure: bytes in, head / body chunks / end out; the caller owns the socket. 1xx interim
// responses are skipped; 204 and 304 have no body. Malformed input throws Http1ParseError.

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
const CRLF_CRLF = [13, 10, 13, 10] as const;

export class Http1ResponseParser {
  private state = State.Done;
  private head: Uint8Array[] = [];
  private headBytes = 0;
  private headMatched = 0;
  private line = "";
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
    this.line = "";
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
    const text = latin1(this.head);
    this.head = [];
    this.headBytes = 0;
    this.headMatched = 0;
    this.onHead(text.slice(0, text.length - 4));
    return end;
  }

  private onHead(text: string): void {
    const lines = text.split("\r\n");
    const m = /^HTTP\/1\.([01]) (\d{3})(?: |$)/.exec(lines[0]!);
    if (!m) throw new Http1ParseError(`not an HTTP/1.x status line: ${JSON.stringify(lines[0]!.slice(0, 80))}`);
    const status = Number(m[2]);
    const headers = new Map<string, string>();
    for (let i = 1; i < lines.length; i++) {
      const l = lines[i]!;
      const colon = l.indexOf(":");
      if (colon <= 0) throw new Http1ParseError(`malformed header line: ${JSON.stringify(l.slice(0, 80))}`);
      const name = l.slice(0, colon).trim().toLowerCase();
      const value = l.slice(colon + 1).trim();
      const prev = headers.get(name);
      headers.set(name, prev === undefined ? value : `${prev}, ${value}`);
    }
    if (status >= 100 && status < 200) {
      // Interim (100 Continue, 103 Early Hints): the real response follows on the same connection.
      if (status === 101) throw new Http1ParseError("the server switched protocols (101), which this client does not speak");
      this.state = State.Head;
      return;
    }
    const connection = headers.get("connection")?.toLowerCase() ?? "";
    this.keepAlive = m[1] === "1" ? !connection.includes("close") : connection.includes("keep-alive");
    this.sink.head({ status, headers });
    if (status === 204 || status === 304) return this.finish();
    const te = headers.get("transfer-encoding");
    if (te !== undefined) {
      if (!/(?:^|,)\s*chunked\s*$/i.test(te)) throw new Http1ParseError(`unsupported transfer-encoding: ${te}`);
      this.state = State.ChunkSize;
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

  /** Chunk-size lines, the CRLF after chunk data, and trailer lines. */
  private readLine(b: Uint8Array, pos: number): number {
    let i = pos;
    while (i < b.length && b[i] !== 10) i++;
    this.line += latin1([b.subarray(pos, i)]);
    if (this.line.length > MAX_LINE_BYTES) throw new Http1ParseError("a chunk-size or trailer line exceeds 8 KiB");
    if (i === b.length) return i;
    let line = this.line;
    this.line = "";
    if (!line.endsWith("\r")) throw new Http1ParseError("a line in the chunked body does not end in CRLF");
    line = line.slice(0, -1);
    if (this.state === State.ChunkDataEnd) {
      if (line !== "") throw new Http1ParseError("chunk data is longer than its declared size");
      this.state = State.ChunkSize;
    } else if (this.state === State.ChunkSize) {
      const size = line.split(";", 1)[0]!.trim();
      if (!/^[0-9a-fA-F]{1,12}$/.test(size)) throw new Http1ParseError(`bad chunk size: ${JSON.stringify(line.slice(0, 40))}`);
      this.remaining = parseInt(size, 16);
      this.state = this.remaining === 0 ? State.Trailers : State.ChunkData;
    } else if (line === "") this.finish(); // the empty line after the (ignored) trailers
    return i + 1;
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

function latin1(parts: readonly Uint8Array[]): string {
  let s = "";
  for (const p of parts) s += Buffer.from(p.buffer, p.byteOffset, p.byteLength).toString("latin1");
  return s;
}
