// A raw TCP client for HTTP wire tests: writes exactly the bytes a test gives, keeps what the server
// sent and splits it into responses with a splitter of its own (so a fault in the project's parsers
// cannot hide one in the server). Tests wait on its state, never on sleeps.
import { connect, type Socket } from "node:net";
import { waitFor } from "./harness.ts";
import { type HttpServer, type HttpServerOptions, serveHttp } from "../src/transport/http/server.ts";

export interface RawResponse {
  status: number;
  headers: Map<string, string>;
  body: string;
}

export class RawHttpClient {
  private received: Buffer[] = [];
  receivedBytes = 0;
  closed = false;
  private constructor(private readonly socket: Socket) {
    socket.on("data", (d: Buffer) => {
      this.received.push(d);
      this.receivedBytes += d.length;
    });
    socket.on("close", () => (this.closed = true));
    socket.on("error", (err) => this.errorHandler?.(err));
  }

  private errorHandler: ((err: Error) => void) | undefined;

  /** Hears the socket's error (ECONNRESET when the server resets the connection). */
  onError(handler: (err: Error) => void): void {
    this.errorHandler = handler;
  }

  static async open(port: number, cleanups?: (() => unknown)[]): Promise<RawHttpClient> {
    const socket = connect({ host: "127.0.0.1", port });
    await new Promise<void>((resolve, reject) => {
      socket.once("connect", () => resolve());
      socket.once("error", reject);
    });
    const client = new RawHttpClient(socket);
    cleanups?.push(() => client.destroy());
    return client;
  }

  write(data: string | Uint8Array): void {
    this.socket.write(typeof data === "string" ? Buffer.from(data, "latin1") : data);
  }

  /** Stops reading (the kernel's buffers fill, then the server's writes block) / reads again. */
  pause(): void {
    this.socket.pause();
  }

  resume(): void {
    this.socket.resume();
  }

  destroy(): void {
    this.socket.destroy();
  }

  /** Everything received so far, as Latin-1 text. */
  get text(): string {
    return this.bytes.toString("latin1");
  }

  /** Everything received so far. */
  get bytes(): Buffer {
    if (this.received.length > 1) this.received = [Buffer.concat(this.received)];
    return this.received[0] ?? Buffer.alloc(0);
  }

  /** The last bytes received end with `suffix` (cheap to poll on a long stream). */
  endsWith(suffix: string): boolean {
    const last = this.received.at(-1);
    if (last !== undefined && last.length >= suffix.length) return last.toString("latin1", last.length - suffix.length) === suffix;
    return this.text.endsWith(suffix);
  }

  /** The complete responses received so far, in order. */
  get responses(): RawResponse[] {
    return splitResponses(this.bytes).responses;
  }

  async waitForResponses(n: number, what = `${n} response(s)`): Promise<RawResponse[]> {
    return waitFor(() => (this.responses.length >= n ? this.responses : undefined), { what });
  }

  async waitForClose(what = "the server to close the connection"): Promise<void> {
    await waitFor(() => this.closed, { what });
  }
}

/**
 * Complete responses in `bytes`, in order (framed by content-length or chunked; a response to HEAD
 * or one running until close is not complete here: read those from `text`).
 */
export function splitResponses(bytes: Buffer): { responses: RawResponse[]; partial: boolean } {
  const responses: RawResponse[] = [];
  let pos = 0;
  for (;;) {
    const headEnd = bytes.indexOf("\r\n\r\n", pos);
    if (headEnd < 0) break;
    const lines = bytes.toString("latin1", pos, headEnd).split("\r\n");
    const status = Number(lines[0]!.split(" ")[1]);
    const headers = new Map<string, string>();
    for (const line of lines.slice(1)) {
      const colon = line.indexOf(":");
      headers.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim());
    }
    let at = headEnd + 4;
    let body = "";
    if (status < 200 || status === 204 || status === 304) {
      // no body
    } else if (headers.get("transfer-encoding") === "chunked") {
      const parts: Buffer[] = [];
      for (;;) {
        const eol = bytes.indexOf("\r\n", at);
        if (eol < 0) return { responses, partial: true };
        const size = parseInt(bytes.toString("latin1", at, eol), 16);
        if (eol + 2 + size + 2 > bytes.length) return { responses, partial: true };
        parts.push(bytes.subarray(eol + 2, eol + 2 + size));
        at = eol + 2 + size + 2;
        if (size === 0) break;
      }
      body = Buffer.concat(parts).toString("latin1");
    } else if (headers.has("content-length")) {
      const length = Number(headers.get("content-length"));
      if (at + length > bytes.length) return { responses, partial: true };
      body = bytes.toString("latin1", at, at + length);
      at += length;
    } else return { responses, partial: true };
    responses.push({ status, headers, body });
    pos = at;
  }
  return { responses, partial: pos < bytes.length };
}

/** serveHttp on a free loopback port, stopped at cleanup, and raw clients to it (the server tests' kit). */
export function rawServerKit(cleanups: (() => unknown)[]) {
  return {
    serve(fetch: HttpServerOptions["fetch"], opts: Partial<HttpServerOptions> = {}): HttpServer {
      const server = serveHttp({ host: "127.0.0.1", port: 0, fetch, ...opts });
      cleanups.push(() => server.stop(true));
      return server;
    },
    open: (server: HttpServer) => RawHttpClient.open(server.port, cleanups),
  };
}
