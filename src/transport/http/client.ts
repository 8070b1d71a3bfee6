// The one place HTTP requests leave the process (fetch): a JSON POST whose response body is read
// as a stream by the caller. Failures to connect surface as HttpClientError with a cause name.
import { KvcrError } from "../../lib/errors.ts";

export interface PostOptions {
  headers?: Record<string, string>;
  signal?: AbortSignal;
}

export class HttpClientError extends KvcrError {
  /** Why the request failed: our timeout, our abort, or the connection. */
  readonly reason: "timeout" | "aborted" | "connection";
  constructor(cause: "timeout" | "aborted" | "connection", message: string) {
    super("HTTP_CLIENT", message);
    this.reason = cause;
  }
}

/** POSTs `body` as JSON; resolves with the response once its headers arrived. */
export async function postJson(url: string, body: unknown, opts: PostOptions = {}): Promise<Response> {
  try {
    return await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json", ...opts.headers },
      body: JSON.stringify(body),
      signal: opts.signal,
      // Benchmarks measure the server: no transparent decompression work on our side.
      decompress: false,
    } as RequestInit);
  } catch (err) {
    throw classify(err, url);
  }
}

/** GETs `url` (e.g. /v1/models); same error classification as postJson. */
export async function get(url: string, opts: PostOptions = {}): Promise<Response> {
  try {
    return await fetch(url, { headers: opts.headers, signal: opts.signal });
  } catch (err) {
    throw classify(err, url);
  }
}

/** Maps a fetch or body-read failure to timeout / aborted / connection. */
export function classify(err: unknown, url: string): HttpClientError {
  if (err instanceof HttpClientError) return err;
  const name = (err as { name?: string } | undefined)?.name;
  const message = err instanceof Error ? err.message : String(err);
  if (name === "TimeoutError") return new HttpClientError("timeout", `${url}: timed out`);
  if (name === "AbortError") return new HttpClientError("aborted", `${url}: aborted`);
  return new HttpClientError("connection", `${url}: ${message}`);
}
