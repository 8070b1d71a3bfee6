// One request to a worker's POST /v1/generate over a WorkerTransport (the pooled keep-alive client,
// or fetch), its answer read as protocol/generate.ts's lines, and the stall watch: nothing for
// `stallMs` aborts with WorkerStalled (→ 504); a vanished worker with WorkerGone (→ 502).
import { concatBytes } from "../../lib/bytes.ts";
import { GenerateLineReader, parseGenerateBody, type GenerateLine } from "../../protocol/generate.ts";
import { KeepAliveClient } from "../../transport/http/keepalive-client.ts";
import type { ResponseWatch } from "../../transport/http/client-exchange.ts";

/** The request body's type, defined in protocol/generate.ts; re-exported for the test fleets that build worker answers. */
export type { GenerateBody } from "../../protocol/generate.ts";

export class WorkerStalled extends Error {
  constructor(readonly workerId: string, stallMs: number) {
    super(`worker ${workerId} sent nothing for ${stallMs} ms`);
  }
}

/** The client went away: the worker request is cancelled, nobody reads the answer. */
export class ClientGone extends Error {
  constructor() {
    super("client disconnected");
  }
}

export type FetchLike = (url: string, init: RequestInit) => Promise<Response>;

/** A worker's answer whose head has arrived: its status, then the body chunk by chunk. */
export interface WorkerReply {
  readonly status: number;
  /** The next body chunk; undefined at the end. */
  read(): Promise<Uint8Array | undefined>;
  /** Stops reading (an unfinished answer is cancelled on the worker). */
  cancel(): void;
}

/**
 * Why a worker request ends early (stall, worker gone, client gone) and the transport hook that
 * stops it: one plain object per request where an AbortController and its listeners cost more.
 */
export class WorkerCancel {
  reason: unknown = undefined;
  private hook: ((reason: unknown) => void) | undefined;

  get aborted(): boolean {
    return this.reason !== undefined;
  }

  abort(reason: unknown): void {
    if (this.reason !== undefined) return;
    this.reason = reason ?? new Error("aborted");
    this.hook?.(this.reason);
  }

  /** The transport's way to stop its request (called at once when already aborted). */
  onAbort(hook: (reason: unknown) => void): void {
    this.hook = hook;
    if (this.reason !== undefined) hook(this.reason);
  }
}

/**
 * POSTs a JSON body to a worker; `cancel` aborts the request and its answer. `watch` hears the
 * answer arrive: each chunk, then its end (the keep-alive client as bytes arrive, read or not, so
 * a client slow to read is not taken for a stalled worker; over fetch, as chunks are read).
 */
export type WorkerTransport = (url: string, body: string, cancel: WorkerCancel, watch?: ResponseWatch, headers?: Record<string, string>) => Promise<WorkerReply>;

const JSON_HEADERS = { "content-type": "application/json" };

/** Over fetch: any URL fetch takes (https too); tests pass a fake fetch here. */
export function fetchTransport(fetchFn: FetchLike): WorkerTransport {
  return async (url, body, cancel, watch, headers) => {
    const ctrl = new AbortController();
    cancel.onAbort((reason) => ctrl.abort(reason));
    const res = await fetchFn(url, { method: "POST", body, headers: headers === undefined ? JSON_HEADERS : { ...JSON_HEADERS, ...headers }, signal: ctrl.signal });
    const reader = res.body?.getReader();
    return {
      status: res.status,
      read: async () => {
        if (!reader) return undefined;
        const { value, done } = await reader.read();
        if (done) watch?.stop();
        else watch?.progress();
        return done ? undefined : value;
      },
      cancel: () => void reader?.cancel().catch(() => {}),
    };
  };
}

/** Over the pooled keep-alive client for plain http: workers (the hot path); anything else over `fallback`. */
export function keepAliveTransport(client: KeepAliveClient, fallback: WorkerTransport): WorkerTransport {
  return (url, body, cancel, watch, headers) => {
    if (!KeepAliveClient.supports(url)) return fallback(url, body, cancel, watch, headers);
    const pending = client.start(url, { method: "POST", headers: headers === undefined ? JSON_HEADERS : { ...JSON_HEADERS, ...headers }, body, watch });
    cancel.onAbort((reason) => pending.abort(reason));
    return pending.response;
  };
}

/**
 * Fails requests with WorkerStalled when their worker sends nothing for stallMs: armed before the
 * request goes out (a worker that never answers), re-armed at every chunk, stopped at the end.
 * One sweep timer for all requests in flight (every stallMs / 4, so a stall is caught between
 * stallMs and 1.25 × stallMs) instead of a timer created and cleared per request.
 */
export class StallWatch {
  private readonly watched = new Set<Stall>();
  private timer: ReturnType<typeof setInterval> | undefined;

  constructor(
    readonly stallMs: number,
    readonly now: () => number,
  ) {}

  watch(cancel: WorkerCancel, workerId: string): Stall {
    const stall = new Stall(this, cancel, workerId);
    this.watched.add(stall);
    this.timer ??= setInterval(this.sweep, Math.max(1, this.stallMs / 4));
    return stall;
  }

  unwatch(stall: Stall): void {
    this.watched.delete(stall);
  }

  private readonly sweep = (): void => {
    const now = this.now();
    for (const s of this.watched) {
      if (now - s.last < this.stallMs) continue;
      this.watched.delete(s);
      s.cancel.abort(new WorkerStalled(s.workerId, this.stallMs));
    }
    // Idle: no timer until the next request (it would keep an idle process awake).
    if (this.watched.size === 0) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  };
}

/** One request's entry in the StallWatch (a ResponseWatch: a transport re-arms it per chunk and stops it at the answer's end). */
export class Stall implements ResponseWatch {
  last: number;
  constructor(
    private readonly owner: StallWatch,
    readonly cancel: WorkerCancel,
    readonly workerId: string,
  ) {
    this.last = owner.now();
  }
  progress(): void {
    this.last = this.owner.now();
  }
  stop(): void {
    this.owner.unwatch(this);
  }
}

/** The whole body as bytes; `onFirstChunk` hears the first one as it arrives. */
export async function readAll(reply: WorkerReply, onFirstChunk?: () => void): Promise<Uint8Array> {
  let first: Uint8Array | undefined;
  let chunks: Uint8Array[] | undefined;
  let size = 0;
  for (let c = await reply.read(); c !== undefined; c = await reply.read()) {
    size += c.length;
    if (first === undefined) {
      first = c;
      onFirstChunk?.();
    } else (chunks ??= [first]).push(c);
  }
  return chunks ? concatBytes(chunks, size) : (first ?? new Uint8Array(0));
}

/** The whole answer's lines (the non-streaming path): collected, then decoded once. */
export async function allLines(reply: WorkerReply, onFirstChunk?: () => void): Promise<GenerateLine[]> {
  return parseGenerateBody(await readAll(reply, onFirstChunk));
}

/** The answer's lines as they arrive (the streaming path). */
export async function* ndjsonLines(reply: WorkerReply): AsyncGenerator<GenerateLine> {
  const reader = new GenerateLineReader();
  for (let c = await reply.read(); c !== undefined; c = await reply.read()) yield* reader.push(c);
  yield* reader.end();
}
