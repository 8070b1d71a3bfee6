// A request's answer lines (token lines, then a summary line, over every worker attempt:
// request-run.ts) as the client's OpenAI reply: one aggregated completion/chat body, or SSE chunks
// as tokens arrive (with an error event, usage chunk and [DONE] as the run ends). The request's
// bookkeeping stays with the caller.
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
import { errorTypeOf, type ErrorType } from "./dynamo-metrics.ts";
import { failureResponse, type WorkerFailure } from "./worker-failure.ts";

export type Kind = "completion" | "chat";

/** Where the answer's lines come from: the next lines (undefined at the end), and the client leaving. */
export interface LineSource {
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
export async function wholeReply(src: LineSource, c: ReplyContext): Promise<Response> {
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
  let text = "";
  for (const id of ids) text += detokenizeOne(id);
  const u = usage(summary.prompt_tokens, summary.completion_tokens, summary.cached_tokens);
  return Response.json(c.kind === "chat" ? chatBody(c.meta, text, "length", u) : completionBody(c.meta, text, "length", u), { headers: c.servedBy });
}

/** SSE chunks as tokens arrive; a client that goes away cancels the worker request. */
export function sseReply(src: LineSource, c: ReplyContext, includeUsage: boolean): Response {
  const { kind, meta } = c;
  let first = true;
  const stream = new ReadableStream<Uint8Array>({
    async pull(controller) {
      let lines: GenerateLine[] | undefined;
      try {
        lines = await src.read();
      } catch (err) {
        const f = c.failure(err);
        c.finish(errorTypeOf(f.status));
        if (f.status !== 499) controller.enqueue(ENCODER.encode(sseData(f.body)));
        controller.close();
        return;
      }
      if (lines === undefined) {
        c.finish("truncated_stream");
        controller.close();
        return;
      }
      // Every line of one read in one write (a worker chunk often carries several tokens).
      let out = "";
      let n = 0;
      for (const line of lines) if ("token_id" in line) n++;
      c.tokens(n);
      for (const line of lines) {
        if ("token_id" in line) {
          const text = detokenizeOne(line.token_id);
          out += sseData(kind === "chat" ? chatChunk(meta, first ? { role: "assistant", content: text } : { content: text }, null) : completionChunk(meta, text, null));
          first = false;
          continue;
        }
        if (line.finish_reason === "length") c.finish(undefined, line.cached_tokens);
        else c.finish("backend_error");
        if (line.finish_reason !== "length") {
          out += sseData(openAiErrorBody(502, `worker ${c.workerId} cancelled the request`, { code: "worker_failed" }));
        } else {
          out += sseData(kind === "chat" ? chatChunk(meta, {}, "length") : completionChunk(meta, "", "length"));
          if (includeUsage) out += sseData(usageChunk(meta, kind === "chat" ? "chat.completion.chunk" : "text_completion", usage(line.prompt_tokens, line.completion_tokens, line.cached_tokens)));
          out += SSE_DONE;
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
  return new Response(stream, { headers: { "content-type": "text/event-stream", "cache-control": "no-cache", ...c.servedBy } });
}
