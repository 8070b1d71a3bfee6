// A worker's NDJSON answer (token lines, then a summary line) as the client's OpenAI reply: one
// aggregated completion/chat body, or SSE chunks as tokens arrive (with an error event, usage
// chunk and [DONE] as the summary says). The request's bookkeeping stays with the caller.
import { detokenizeOne } from "../../core/text/tokenizer.ts";
import {
  chatBody,
  chatChunk,
  completionBody,
  completionChunk,
  openAiError,
  openAiErrorBody,
  SSE_DONE,
  sseData,
  usage,
  usageChunk,
  type ResponseMeta,
} from "../../protocol/openai.ts";
import type { GenerateLine } from "../../protocol/generate.ts";
import { failureResponse, type WorkerFailure } from "./worker-failure.ts";
import { allLines, ClientGone, ndjsonLines, type WorkerCancel, type WorkerReply } from "./worker-call.ts";

export type Kind = "completion" | "chat";

/** One proxied request, as the reply sees it. */
export interface ReplyContext {
  readonly kind: Kind;
  readonly meta: ResponseMeta;
  readonly workerId: string;
  readonly ctrl: WorkerCancel;
  /** Response headers naming the (worker, rank) that served it. */
  readonly servedBy: Record<string, string>;
  /** The worker's prefill is over (its first body chunk): the router's view only. */
  prefillDone(): void;
  /** The first token reaches the client: prefillDone, and the time to first token is observed. */
  firstToken(): void;
  /** The request ended, any way (idempotent). */
  finish(): void;
  /** A failed read as the client's error. */
  failure(err: unknown): WorkerFailure;
}

const ENCODER = new TextEncoder();

/** The whole answer read, then one completion or chat body (502 unless the worker finished it). */
export async function wholeReply(res: WorkerReply, c: ReplyContext): Promise<Response> {
  const ids: number[] = [];
  let summary: GenerateLine | undefined;
  try {
    // TTFT of a non-streaming request is its time to the whole answer: no token reaches the client earlier.
    // The router's view of the worker's prefill ends with the first body chunk (it carries the first token).
    for (const line of await allLines(res, () => c.prefillDone())) {
      if ("token_id" in line) {
        if (ids.length === 0) c.firstToken();
        ids.push(line.token_id);
      } else summary = line;
    }
  } catch (err) {
    c.finish();
    return failureResponse(c.failure(err));
  }
  c.finish();
  if (!summary || !("finish_reason" in summary) || summary.finish_reason !== "length") {
    return openAiError(502, `worker ${c.workerId} ended the request without finishing it (${summary && "finish_reason" in summary ? summary.finish_reason : "no summary"})`, { code: "worker_failed" });
  }
  let text = "";
  for (const id of ids) text += detokenizeOne(id);
  const u = usage(summary.prompt_tokens, summary.completion_tokens, summary.cached_tokens);
  return Response.json(c.kind === "chat" ? chatBody(c.meta, text, "length", u) : completionBody(c.meta, text, "length", u), { headers: c.servedBy });
}

/** SSE chunks as tokens arrive; a client that goes away cancels the worker request. */
export function sseReply(res: WorkerReply, c: ReplyContext, includeUsage: boolean): Response {
  const { kind, meta } = c;
  const lines = ndjsonLines(res);
  let first = true;
  const stream = new ReadableStream<Uint8Array>({
    async pull(controller) {
      let next: IteratorResult<GenerateLine>;
      try {
        next = await lines.next();
      } catch (err) {
        c.finish();
        if (!(c.ctrl.reason instanceof ClientGone)) controller.enqueue(ENCODER.encode(sseData(c.failure(err).body)));
        controller.close();
        return;
      }
      if (next.done) {
        c.finish();
        controller.close();
        return;
      }
      const line = next.value;
      if ("token_id" in line) {
        if (first) c.firstToken();
        const text = detokenizeOne(line.token_id);
        const chunk = kind === "chat" ? chatChunk(meta, first ? { role: "assistant", content: text } : { content: text }, null) : completionChunk(meta, text, null);
        first = false;
        controller.enqueue(ENCODER.encode(sseData(chunk)));
        return;
      }
      c.finish();
      if (line.finish_reason !== "length") {
        controller.enqueue(ENCODER.encode(sseData(openAiErrorBody(502, `worker ${c.workerId} cancelled the request`, { code: "worker_failed" }))));
        controller.close();
        return;
      }
      let out = sseData(kind === "chat" ? chatChunk(meta, {}, "length") : completionChunk(meta, "", "length"));
      if (includeUsage) out += sseData(usageChunk(meta, kind === "chat" ? "chat.completion.chunk" : "text_completion", usage(line.prompt_tokens, line.completion_tokens, line.cached_tokens)));
      controller.enqueue(ENCODER.encode(out + SSE_DONE));
      controller.close();
    },
    cancel() {
      c.ctrl.abort(new ClientGone());
      res.cancel();
      c.finish();
    },
  });
  return new Response(stream, { headers: { "content-type": "text/event-stream", "cache-control": "no-cache", ...c.servedBy } });
}
