// One request to a mocker worker's `POST /v1/generate` (SPEC §3) and its NDJSON lines: token
// lines `{"token_id"}` then a summary line. A stall (no line for `stallMs`) aborts with
// WorkerStalled (→ 504); a vanished worker aborts with WorkerGone (→ 502, routing-state.ts).
import { concatBytes } from "../../lib/bytes.ts";
import type { GenerateSummary } from "../../protocol/generate.ts";

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

export type WorkerLine = { token_id: number } | GenerateSummary;

export interface GenerateBody {
  worker: number;
  dp_rank: number;
  token_ids: readonly number[];
  max_tokens: number;
  request_id: string;
  kv_hint?: unknown;
}

export type FetchLike = (url: string, init: RequestInit) => Promise<Response>;

/**
 * The body's chunks, aborting `ctrl` with WorkerStalled when a read waits longer than stallMs (the
 * timer restarts at every chunk); the reader is released however the caller stops.
 */
async function* chunksUntilStall(body: ReadableStream<Uint8Array>, ctrl: AbortController, workerId: string, stallMs: number): AsyncGenerator<Uint8Array> {
  const reader = body.getReader();
  const timer = setTimeout(() => ctrl.abort(new WorkerStalled(workerId, stallMs)), stallMs);
  let ended = false;
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      timer.refresh();
      yield value;
    }
    ended = true;
  } finally {
    clearTimeout(timer);
    // A closed stream needs no release; one the caller stopped reading does.
    if (!ended) reader.releaseLock();
  }
}

/** Reads NDJSON lines, aborting `ctrl` with WorkerStalled when a read waits longer than stallMs. */
export async function* ndjsonLines(body: ReadableStream<Uint8Array>, ctrl: AbortController, workerId: string, stallMs: number): AsyncGenerator<WorkerLine> {
  const decoder = new TextDecoder();
  let buffered = "";
  for await (const value of chunksUntilStall(body, ctrl, workerId, stallMs)) {
    buffered += decoder.decode(value, { stream: true });
    let nl: number;
    while ((nl = buffered.indexOf("\n")) >= 0) {
      const line = buffered.slice(0, nl);
      buffered = buffered.slice(nl + 1);
      if (line.length > 0) yield JSON.parse(line) as WorkerLine;
    }
  }
  if (buffered.trim().length > 0) yield JSON.parse(buffered) as WorkerLine;
}

/**
 * The whole NDJSON response as lines (the non-streaming path): chunks are collected and decoded
 * once, with the same stall rule as ndjsonLines (no chunk for stallMs aborts with WorkerStalled).
 */
export async function allLines(body: ReadableStream<Uint8Array>, ctrl: AbortController, workerId: string, stallMs: number): Promise<WorkerLine[]> {
  // One reader loop, no async generator between it and the caller: this runs on every
  // non-streaming request, where the generator's per-chunk promises and the lock release of an
  // already closed stream were measurable (the stream is closed or errored by the time it ends).
  const reader = body.getReader();
  const timer = setTimeout(() => ctrl.abort(new WorkerStalled(workerId, stallMs)), stallMs);
  let first: Uint8Array | undefined;
  let chunks: Uint8Array[] | undefined;
  let size = 0;
  let ended = false;
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      timer.refresh();
      size += value.length;
      if (first === undefined) first = value;
      else (chunks ??= [first]).push(value);
    }
    ended = true;
  } finally {
    clearTimeout(timer);
    if (!ended) reader.releaseLock();
  }
  const bytes = chunks ? concatBytes(chunks, size) : (first ?? new Uint8Array(0));
  const text = DECODER.decode(bytes);
  const out: WorkerLine[] = [];
  let start = 0;
  for (;;) {
    const nl = text.indexOf("\n", start);
    const line = nl === -1 ? text.slice(start) : text.slice(start, nl);
    if (line.trim().length > 0) out.push(JSON.parse(line) as WorkerLine);
    if (nl === -1) break;
    start = nl + 1;
  }
  return out;
}

const DECODER = new TextDecoder();
