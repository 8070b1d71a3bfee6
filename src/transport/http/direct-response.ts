// Streamed answers whose producer pushes its chunks (the mocker's token streams): a Response
// (`instanceof Response` holds, every member works) whose source the server drives itself, writing
// each chunk to the socket as it is pushed, instead of reading it back through a ReadableStream and
// a promise per chunk. Anyone else who asks for the body gets Bun's direct ReadableStream over the
// same source, so the answer works with any server or reader. Headers are made only if asked for.
import { FieldResponse, lowerCased } from "./field-response.ts";

/** Where a source writes its body: Bun's direct-stream controller, or the server's own sink. */
export interface DirectSink {
  /** Queues a chunk; flush() sends what was queued (the server's sink sends at once). */
  write(chunk: Uint8Array | string): unknown;
  flush(): unknown;
  /** The body is complete. */
  close(): unknown;
  /**
   * Set by the server's sink: a chunk is copied if kept, so the source may hand a view of a buffer
   * it reuses. Bun's controller may keep what it is given, so without it a source hands its own copy.
   */
  readonly copiesChunks?: true;
}

/**
 * A body produced by pushing, read once. `pull` is called once with the sink; the body ends at
 * close(), or when the promise pull returns settles (rejected: the body broke off).
 */
export interface DirectSource {
  pull(sink: DirectSink): void | Promise<void>;
  /** The reader went away before the end: nothing more will be read. */
  cancel(): void;
}

const UTF8 = new TextDecoder();

export class DirectResponse extends FieldResponse {
  private stream: ReadableStream<Uint8Array> | undefined;
  private taken = false;

  constructor(
    private readonly source: DirectSource,
    status: number,
    fields: Readonly<Record<string, string>>,
  ) {
    super(status, fields);
  }

  get body(): ReadableStream<Uint8Array> {
    this.stream ??= new ReadableStream({
      type: "direct",
      pull: (controller: ReadableStreamDirectController) => this.source.pull(controller),
      cancel: () => this.source.cancel(),
    }) as ReadableStream<Uint8Array>;
    return this.stream;
  }

  get bodyUsed(): boolean {
    return this.taken || (this.stream?.locked ?? false);
  }

  /** The source, for the server to drive, if nobody has read or asked for the body yet (then it is the server's). */
  take(): DirectSource | undefined {
    if (this.bodyUsed || this.stream !== undefined) return undefined;
    this.taken = true;
    return this.source;
  }

  async bytes(): Promise<Uint8Array<ArrayBuffer>> {
    return (await Bun.readableStreamToBytes(this.unread())) as Uint8Array<ArrayBuffer>;
  }

  async text(): Promise<string> {
    return UTF8.decode(await this.bytes());
  }

  async json(): Promise<unknown> {
    return JSON.parse(await this.text()) as unknown;
  }

  async arrayBuffer(): Promise<ArrayBuffer> {
    return (await this.bytes()).buffer;
  }

  /** The body decoded as UTF-8 text, chunk by chunk (Bun's extension). */
  textStream(): ReadableStream<string> {
    return (this.unread() as ReadableStream).pipeThrough(new TextDecoderStream());
  }

  blob(): ReturnType<Response["blob"]> {
    return this.native().blob();
  }

  formData(): ReturnType<Response["formData"]> {
    return this.native().formData();
  }

  clone(): Response {
    throw new TypeError("a pushed body cannot be cloned: its producer writes it once");
  }

  private native(): Response {
    return new Response(this.unread(), { status: this.status, headers: this.fields });
  }

  /** The body stream, to be read whole by the caller: the body is used from now on. */
  private unread(): ReadableStream<Uint8Array> {
    if (this.bodyUsed) throw new TypeError("Body already used");
    const body = this.body;
    this.taken = true;
    return body;
  }
}

/** A Response whose body `source` pushes (status 200 unless given), which the server may drive itself. */
export function directResponse(source: DirectSource, init: { status?: number; headers?: Readonly<Record<string, string>> } = {}): DirectResponse {
  return new DirectResponse(source, init.status ?? 200, lowerCased(init.headers ?? {}));
}
