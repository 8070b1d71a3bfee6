// Answers whose body is bytes the app already holds: a Response (`instanceof Response` holds, every
// member works) made without a native Response and its Headers, which the server sends with its
// head in one write, at once, instead of reading the body back out (a native Response per answer
// was the largest single cost of a mocker request). Its Headers and body stream are made only if
// someone asks; clone, blob and formData go through a native copy.

import { FieldResponse, lowerCased } from "./field-response.ts";

const JSON_TYPE = "application/json;charset=utf-8";
const UTF8 = new TextDecoder();

export class WholeResponse extends FieldResponse {
  private stream: ReadableStream<Uint8Array> | undefined;
  private used = false;

  constructor(
    private readonly content: Uint8Array,
    status: number,
    fields: Readonly<Record<string, string>>,
  ) {
    super(status, fields);
  }

  get body(): ReadableStream<Uint8Array> {
    this.stream ??= new Response(this.content).body!;
    return this.stream;
  }

  get bodyUsed(): boolean {
    return this.used || (this.stream?.locked ?? false);
  }

  /** The bytes, if nobody read them yet (what the server sends). */
  unread(): Uint8Array | undefined {
    return this.bodyUsed || this.stream !== undefined ? undefined : this.content;
  }

  async bytes(): Promise<Uint8Array<ArrayBuffer>> {
    return new Uint8Array(await this.read()) as Uint8Array<ArrayBuffer>;
  }

  async text(): Promise<string> {
    return UTF8.decode(await this.read());
  }

  async json(): Promise<unknown> {
    return JSON.parse(await this.text()) as unknown;
  }

  async arrayBuffer(): Promise<ArrayBuffer> {
    return new Uint8Array(await this.read()).buffer;
  }

  /** The body decoded as UTF-8 text, chunk by chunk (Bun's extension). */
  textStream(): ReadableStream<string> {
    if (this.bodyUsed) throw new TypeError("Body already used");
    return (this.body as ReadableStream).pipeThrough(new TextDecoderStream());
  }

  blob(): ReturnType<Response["blob"]> {
    return this.native().blob();
  }

  formData(): ReturnType<Response["formData"]> {
    return this.native().formData();
  }

  clone(): Response {
    if (this.bodyUsed) throw new TypeError("Body already used");
    return new WholeResponse(this.content, this.status, this.fields);
  }

  private native(): Response {
    if (this.bodyUsed) throw new TypeError("Body already used");
    this.used = true;
    return new Response(this.stream ?? this.content, { status: this.status, headers: this.fields });
  }

  /** The body, once: the bytes, or what is left of the stream when someone made it. */
  private read(): Uint8Array | Promise<Uint8Array> {
    if (this.bodyUsed) throw new TypeError("Body already used");
    this.used = true;
    return this.stream === undefined ? this.content : Bun.readableStreamToBytes(this.stream);
  }
}

/** A Response of `body` (status 200 unless given), which the server may send without reading it back. */
export function wholeResponse(body: Uint8Array, init: { status?: number; headers?: Readonly<Record<string, string>> } = {}): WholeResponse {
  return new WholeResponse(body, init.status ?? 200, lowerCased(init.headers ?? {}));
}

/** As Response.json (same body, status and content type), sent without reading it back. */
export function wholeJson(value: unknown, init: { status?: number; headers?: Readonly<Record<string, string>> } = {}): WholeResponse {
  return new WholeResponse(Buffer.from(JSON.stringify(value)), init.status ?? 200, { "content-type": JSON_TYPE, ...lowerCased(init.headers ?? {}) });
}

/** The bytes of a whole Response not read yet; undefined for any other Response. */
export function wholeBodyOf(res: Response): Uint8Array | undefined {
  return res instanceof WholeResponse ? res.unread() : undefined;
}
