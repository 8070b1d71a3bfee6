// What a Response made without a native one shares (WholeResponse, DirectResponse): its status, its
// header fields as a lower-case record, Headers made only if someone asks (the server writes the
// head from the record, or from the Headers once made and maybe changed), and `instanceof Response`.
// Each kind supplies its body.

export abstract class FieldResponse implements Response {
  private headersMade: Headers | undefined;

  constructor(
    readonly status: number,
    /** Header fields, names lower-case. */
    readonly fields: Readonly<Record<string, string>>,
  ) {}

  get statusText(): string {
    return "";
  }
  get type(): Response["type"] {
    return "default";
  }
  get url(): string {
    return "";
  }
  get redirected(): boolean {
    return false;
  }
  get ok(): boolean {
    return this.status >= 200 && this.status <= 299;
  }

  get headers(): Headers {
    this.headersMade ??= new Headers(this.fields);
    return this.headersMade;
  }

  /** The fields the head is written from: the Headers when someone made (and maybe changed) them, else the record. */
  headFields(): Headers | Readonly<Record<string, string>> {
    return this.headersMade ?? this.fields;
  }

  abstract readonly body: ReadableStream<Uint8Array>;
  abstract readonly bodyUsed: boolean;
  abstract bytes(): Promise<Uint8Array<ArrayBuffer>>;
  abstract text(): Promise<string>;
  abstract json(): Promise<unknown>;
  abstract arrayBuffer(): Promise<ArrayBuffer>;
  abstract blob(): ReturnType<Response["blob"]>;
  abstract formData(): ReturnType<Response["formData"]>;
  abstract clone(): Response;
  abstract textStream(): ReadableStream<string>;
}

// `res instanceof Response` holds for every kind; every member is its own.
Object.setPrototypeOf(FieldResponse.prototype, Response.prototype);

/** `fields` with lower-case names (the record the head is written from). */
export function lowerCased(fields: Readonly<Record<string, string>>): Readonly<Record<string, string>> {
  for (const name in fields) {
    if (name !== name.toLowerCase()) return Object.fromEntries(Object.entries(fields).map(([n, v]) => [n.toLowerCase(), v]));
  }
  return fields;
}
