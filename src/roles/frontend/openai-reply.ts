// A request's answer lines (token lines, then a summary line, over every worker attempt:
// request-run.ts) as the client's OpenAI reply: one aggregated completion/chat body, or SSE chunks
// as tokens arrive (with an error event, usage chunk and [DONE] as the run ends), both written by
// the OpenAI answer every role shares (roles/shared/serving/openai-answer.ts). The request's bookkeeping stays
// with the caller.
import { openAiError, openAiErrorBody, type ResponseMeta } from "../../protocol/openai.ts";
import type { GenerateLine } from "../../protocol/generate.ts";
import { SSE_HEADERS, SseAnswer, wholeAnswerBody, type Kind, type StreamOptions } from "../shared/serving/openai-answer.ts";
import { errorTypeOf, type ErrorType } from "./dynamo-metrics.ts";
import { wholeJson } from "../../transport/http/whole-response.ts";
import { failureResponse, type WorkerFailure } from "./worker-failure.ts";

export type { Kind };

/** Where the answer's lines come from: the next lines (undefined at the end), and the client leaving. */
export interface LineStream {
  read(): Promise<GenerateLine[] | undefined>;
  cancel(): void;
}

/** One proxied request, as the reply sees it. */
export interface ReplyContext {
  readonly kind: Kind;
  readonly meta: ResponseMeta;
  readonly workerId: string;
  /** Response headers naming the (worker, rank) that served it. */
  readonly servedBy: Record<string, string>;
  /** `n` tokens reach the client now (TTFT on the first, then ITL and output tokens). */
  tokens(n: number): void;
  /** The request ended: success (with the prompt's cached tokens), or the error it ended with (idempotent). */
  finish(error?: ErrorType, cachedTokens?: number): void;
  /** A failed read as the client's error. */
  failure(err: unknown): WorkerFailure;
}

const ENCODER = new TextEncoder();

/** The whole answer read, then one completion or chat body (502 unless it finished). */
export async function wholeReply(src: LineStream, c: ReplyContext): Promise<Response> {
  const ids: number[] = [];
  let summary: GenerateLine | undefined;
  try {
    for (let lines = await src.read(); lines !== undefined; lines = await src.read()) {
      for (const line of lines) {
        if ("token_id" in line) ids.push(line.token_id);
        else summary = line;
      }
    }
  } catch (err) {
    const f = c.failure(err);
    c.finish(errorTypeOf(f.status));
    return failureResponse(f);
  }
  // TTFT of a non-streaming request is its time to the whole answer: no token reaches the client earlier.
  c.tokens(ids.length);
  if (!summary || !("finish_reason" in summary) || summary.finish_reason !== "length") {
    c.finish("backend_error");
    return openAiError(502, `worker ${c.workerId} ended the request without finishing it (${summary && "finish_reason" in summary ? summary.finish_reason : "no summary"})`, { code: "worker_failed" });
  }
  c.finish(undefined, summary.cached_tokens);
  return wholeJson(wholeAnswerBody(c.kind, c.meta, ids, summary), { headers: c.servedBy });
}

/** SSE chunks as tokens arrive; a client that goes away cancels the worker request. */
export function sseReply(src: LineStream, c: ReplyContext, opts: StreamOptions): Response {
  const answer = new SseAnswer(c.kind, c.meta, opts);
  const ids: number[] = [];
  const stream = new ReadableStream<Uint8Array>({
    async pull(controller) {
      let lines: GenerateLine[] | undefined;
      try {
        lines = await src.read();
      } catch (err) {
        const f = c.failure(err);
        c.finish(errorTypeOf(f.status));
        if (f.status !== 499) controller.enqueue(ENCODER.encode(answer.errorEvent(f.body)));
        controller.close();
        return;
      }
      if (lines === undefined) {
        c.finish("truncated_stream");
        controller.close();
        return;
      }
      // Every line of one read in one write (a worker chunk often carries several tokens).
      ids.length = 0;
      let summary: GenerateLine | undefined;
      for (const line of lines) {
        if ("token_id" in line) ids.push(line.token_id);
        else {
          summary = line;
          break;
        }
      }
      c.tokens(ids.length);
      let out = answer.tokenEvents(ids);
      if (summary && "finish_reason" in summary) {
        if (summary.finish_reason === "length") {
          c.finish(undefined, summary.cached_tokens);
          out += answer.finishEvents(summary);
        } else {
          c.finish("backend_error");
          out += answer.errorEvent(openAiErrorBody(502, `worker ${c.workerId} cancelled the request`, { code: "worker_failed" }));
        }
        controller.enqueue(ENCODER.encode(out));
        controller.close();
        return;
      }
      if (out.length > 0) controller.enqueue(ENCODER.encode(out));
    },
    cancel() {
      src.cancel();
      c.finish("cancelled");
    },
  });
  return new Response(stream, { headers: { ...SSE_HEADERS, ...c.servedBy } });
}
