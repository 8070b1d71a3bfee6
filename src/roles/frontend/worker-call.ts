// One request to a mocker worker's `POST /v1/generate` (SPEC §3) and its NDJSON lines: token
// lines `{"token_id"}` then a summary line. A stall (no line for `stallMs`) aborts with
// WorkerStalled (→ 504); a vanished worker aborts with WorkerGone (→ 502, routing-state.ts).
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

/** Reads NDJSON lines, aborting `ctrl` with WorkerStalled when a read waits longer than stallMs. */
export async function* ndjsonLines(body: ReadableStream<Uint8Array>, ctrl: AbortController, workerId: string, stallMs: number): AsyncGenerator<WorkerLine> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffered = "";
  const timer = setTimeout(() => ctrl.abort(new WorkerStalled(workerId, stallMs)), stallMs);
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      timer.refresh();
      buffered += decoder.decode(value, { stream: true });
      let nl: number;
      while ((nl = buffered.indexOf("\n")) >= 0) {
        const line = buffered.slice(0, nl);
        buffered = buffered.slice(nl + 1);
        if (line.length > 0) yield JSON.parse(line) as WorkerLine;
      }
    }
    if (buffered.trim().length > 0) yield JSON.parse(buffered) as WorkerLine;
  } finally {
    clearTimeout(timer);
    reader.releaseLock();
  }
}
