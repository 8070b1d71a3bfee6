// The request an app gets from serveHttp: Request's whole interface (`instanceof Request` holds)
// over what the parser produced, its Headers, AbortSignal and body stream made on first use (a
// native Request per request cost a quarter of the server's time); clone, formData, blob go native.

const UTF8 = new TextDecoder();

export class ServerRequest implements Request {
  private headersMade: Headers | undefined;
  private controller: AbortController | undefined;
  private abortReason: unknown;
  private aborted = false;
  private stream: ReadableStream<Uint8Array> | null | undefined;
  private used = false;

  // A native Request's defaults (what Bun.serve hands an app): getters on the prototype, so a
  // request is not ten fields larger.
  get cache(): Request["cache"] {
    return "default";
  }
  get credentials(): Request["credentials"] {
    return "same-origin";
  }
  get destination(): Request["destination"] {
    return "";
  }
  get integrity(): string {
    return "";
  }
  get keepalive(): boolean {
    return false;
  }
  get mode(): Request["mode"] {
    return "cors";
  }
  get redirect(): Request["redirect"] {
    return "follow";
  }
  get referrer(): string {
    return "about:client";
  }
  get referrerPolicy(): Request["referrerPolicy"] {
    return "";
  }
  get duplex(): Request["duplex"] {
    return "half";
  }

  constructor(
    readonly method: string,
    readonly url: string,
    /** Header fields as [name, value, name, value, …], names lower-case. */
    private readonly fields: readonly string[],
    /** The whole body when it arrived with the head; a stream while it is arriving; undefined without one. */
    private readonly content: Uint8Array | ReadableStream<Uint8Array> | undefined,
  ) {}

  get headers(): Headers {
    if (this.headersMade === undefined) {
      const h = new Headers();
      const f = this.fields;
      for (let i = 0; i < f.length; i += 2) h.append(f[i]!, f[i + 1]!);
      this.headersMade = h;
    }
    return this.headersMade;
  }

  get signal(): AbortSignal {
    if (this.controller === undefined) {
      this.controller = new AbortController();
      if (this.aborted) this.controller.abort(this.abortReason);
    }
    return this.controller.signal;
  }

  /** The client left, or the server answered for the app: the signal aborts (now, or as made). */
  abort(reason: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.abortReason = reason;
    this.controller?.abort(reason);
    const gone = this.goneListeners;
    this.goneListeners = undefined;
    if (gone !== undefined) for (const fn of gone) fn();
  }

  private goneListeners: (() => void)[] | undefined;

  /** Runs `fn` once when the request aborts (now, if it has), without making its AbortSignal. */
  whenAborted(fn: () => void): void {
    if (this.aborted) fn();
    else (this.goneListeners ??= []).push(fn);
  }

  get body(): ReadableStream<Uint8Array> | null {
    if (this.stream === undefined) {
      const c = this.content;
      this.stream = c === undefined ? null : c instanceof Uint8Array ? new Response(c).body : c;
    }
    return this.stream;
  }

  get bodyUsed(): boolean {
    return this.used || (this.stream?.locked ?? false);
  }

  async bytes(): Promise<Uint8Array<ArrayBuffer>> {
    this.take();
    const c = this.content;
    if (this.stream === undefined && c instanceof Uint8Array) return new Uint8Array(c) as Uint8Array<ArrayBuffer>;
    const stream = this.body;
    return stream === null ? new Uint8Array(0) : Bun.readableStreamToBytes(stream);
  }

  async text(): Promise<string> {
    this.take();
    const c = this.content;
    if (this.stream === undefined && c instanceof Uint8Array) return UTF8.decode(c);
    const stream = this.body;
    return stream === null ? "" : Bun.readableStreamToText(stream);
  }

  async json(): Promise<unknown> {
    return JSON.parse(await this.text()) as unknown;
  }

  async arrayBuffer(): Promise<ArrayBuffer> {
    const bytes = await this.bytes();
    return bytes.buffer.byteLength === bytes.length ? bytes.buffer : bytes.slice().buffer;
  }

  /** The body decoded as UTF-8 text, chunk by chunk (Bun's extension). */
  textStream(): ReadableStream<string> {
    if (this.bodyUsed) throw new TypeError("Body already used");
    const stream = this.body ?? new Response("").body!;
    return stream.pipeThrough(new TextDecoderStream());
  }

  blob(): ReturnType<Request["blob"]> {
    return this.toRequest().blob();
  }

  formData(): ReturnType<Request["formData"]> {
    return this.toRequest().formData();
  }

  clone(): Request {
    if (this.bodyUsed) throw new TypeError("Body already used");
    const c = this.content;
    if (c === undefined || c instanceof Uint8Array) return this.native(c);
    // The arriving stream is split in two: this request reads one half, the clone the other.
    const [mine, theirs] = (this.body as ReadableStream<Uint8Array>).tee();
    this.stream = mine;
    return this.native(theirs);
  }

  /** A native Request with the same method, URL, headers, signal and body (the body is handed over). */
  toRequest(): Request {
    if (this.bodyUsed) throw new TypeError("Body already used");
    const c = this.content;
    this.used = true;
    return this.native(this.stream === undefined && c instanceof Uint8Array ? c : (this.body ?? undefined));
  }

  private native(body: Uint8Array | ReadableStream<Uint8Array> | undefined): Request {
    return new Request(this.url, { method: this.method, headers: this.headers, body, signal: this.signal });
  }

  /** Bytes of a body that arrived whole with the head and is unread (0 without a body); undefined otherwise. */
  wholeBodyBytes(): number | undefined {
    if (this.bodyUsed || this.stream !== undefined) return undefined;
    const c = this.content;
    return c === undefined ? 0 : c instanceof Uint8Array ? c.length : undefined;
  }

  private take(): void {
    if (this.bodyUsed) throw new TypeError("Body already used");
    this.used = true;
  }
}

/**
 * The size of a request's body when the whole of it is already in memory (it came with the head,
 * through this server), so an app can skip the deadline and the capped read a body still arriving
 * needs; undefined for any other request.
 */
export function bodyBytesInHand(req: Request): number | undefined {
  return req instanceof ServerRequest ? req.wholeBodyBytes() : undefined;
}

/**
 * Runs `gone` once when the client of `req` goes away before its answer is out (at once if it
 * has): the signal's abort, without an AbortController per request when the request is ours.
 */
export function onClientGone(req: Request, gone: () => void): void {
  if (req instanceof ServerRequest) return req.whenAborted(gone);
  if (req.signal.aborted) gone();
  else req.signal.addEventListener("abort", gone, { once: true });
}

// `req instanceof Request` holds; every member is ServerRequest's own (none falls to a native getter).
Object.setPrototypeOf(ServerRequest.prototype, Request.prototype);
