// How a failed worker call reaches the client: OpenAI's error status and body, built once, so a
// plain error response and an SSE error event carry the same object; and what kind of failure it
// was, which decides whether request-run.ts retries, migrates or gives up, and whether the worker
// leaves routing.
import { openAiErrorBody, type OpenAiErrorBody } from "../../protocol/openai.ts";
import { WorkerGone } from "./routing-state.ts";
import { ClientGone, WorkerStalled, type WorkerCancel } from "./worker-call.ts";

export interface WorkerFailure {
  status: number;
  body: OpenAiErrorBody;
}

export function failureResponse(f: WorkerFailure): Response {
  return Response.json(f.body, { status: f.status });
}

/** A call or read that threw: the cancel's reason (stall 504, worker gone 502, client gone 499) wins over the error. */
export function callFailure(ctrl: WorkerCancel, err: unknown, workerId: string): WorkerFailure {
  const reason = ctrl.aborted ? ctrl.reason : err;
  if (reason instanceof WorkerStalled) return failure(504, reason.message, "worker_timeout");
  if (reason instanceof WorkerGone) return failure(502, reason.message, "worker_gone");
  if (reason instanceof ClientGone) return failure(499, reason.message);
  return failure(502, `worker ${workerId} failed: ${reason instanceof Error ? reason.message : String(reason)}`, "worker_failed");
}

/** A worker that answered other than 200 with `text`. */
export function answerFailure(workerId: string, status: number, text: string): WorkerFailure {
  // The worker refused the request itself (e.g. it can never fit its KV cache): the client's to fix.
  if (status === 400) return failure(400, `worker ${workerId} refused the request: ${workerMessage(text)}`, "worker_refused");
  return failure(502, `worker ${workerId} answered ${status}: ${text.slice(0, 300)}`, "worker_failed");
}

function failure(status: number, message: string, code?: string): WorkerFailure {
  return { status, body: openAiErrorBody(status, message, { code }) };
}

function workerMessage(text: string): string {
  try {
    const m = (JSON.parse(text) as { error?: { message?: unknown } }).error?.message;
    if (typeof m === "string") return m;
  } catch {
    // not JSON: the raw text below
  }
  return text.slice(0, 300);
}

/**
 * What went wrong with one attempt, as the retry and ejection rules see it:
 * - unsent: the worker never got the request (connection refused): retried;
 * - busy: the worker turned it away with 503: retried, and counted toward ejection (not at once);
 * - lost: the connection broke after the request was written, or the stream ended unfinished;
 * - shutdown: the worker cancelled the request itself (it is stopping);
 * - stalled: nothing arrived for the stall timeout; gone: the worker's discovery record vanished;
 * - refused: the worker's 400 (the client's to fix); error: any other answer; client: the client left.
 * lost, shutdown, stalled and gone may migrate; unsent, lost and shutdown take the worker out at once.
 */
export type FailureKind = "unsent" | "busy" | "lost" | "shutdown" | "stalled" | "gone" | "refused" | "error" | "client";

export interface AttemptFailure {
  kind: FailureKind;
  failure: WorkerFailure;
}

/** A call or read that threw; `answered`: the worker's answer head had arrived. */
export function attemptFailure(ctrl: WorkerCancel, err: unknown, workerId: string, answered: boolean): AttemptFailure {
  const reason = ctrl.aborted ? ctrl.reason : err;
  const failure = callFailure(ctrl, err, workerId);
  if (reason instanceof WorkerStalled) return { kind: "stalled", failure };
  if (reason instanceof WorkerGone) return { kind: "gone", failure };
  if (reason instanceof ClientGone) return { kind: "client", failure };
  return { kind: !answered && neverConnected(reason) ? "unsent" : "lost", failure };
}

/** A worker that answered other than 200: 503 (not taking requests) is retried elsewhere. */
export function answerAttemptFailure(workerId: string, status: number, text: string): AttemptFailure {
  const failure = answerFailure(workerId, status, text);
  return { kind: status === 503 ? "busy" : status === 400 ? "refused" : "error", failure };
}

/** A stream that ended without its summary line, or with the worker's own cancel. */
export function unfinishedStream(workerId: string, cancelled: boolean): AttemptFailure {
  return cancelled
    ? { kind: "shutdown", failure: failure(502, `worker ${workerId} cancelled the request`, "worker_failed") }
    : { kind: "lost", failure: failure(502, `worker ${workerId} ended the stream without finishing it`, "worker_failed") };
}

/**
 * The connection was never made, so no byte of the request reached the worker: the keep-alive
 * client's connect failure, or fetch's refused connection. A dead pooled connection the request
 * was not written to is already sent again by the client itself.
 */
function neverConnected(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const code = (err as { code?: unknown }).code;
  return err.message.startsWith("cannot connect to ") || code === "ConnectionRefused" || code === "ECONNREFUSED";
}
