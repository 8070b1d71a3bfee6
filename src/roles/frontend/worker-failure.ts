// How a failed worker call reaches the client: OpenAI's error status and body, built once, so a
// plain error response and an SSE error event carry the same object.
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
