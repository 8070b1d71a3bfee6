// One request's OpenAI answer as text, for the frontend (from its workers' lines) and each mock
// worker's own API (from its engine) alike, so both write the same bytes: the SSE events of a
// streamed completion or chat (a chunk per generated token, the finish chunk, the usage chunk with
// stream_options.include_usage, usage on every chunk with continuous_usage_stats as vLLM adds it,
// `data: [DONE]`) and the body of a non-streamed one. A chunk's JSON around its text is built once
// per request and spliced, not serialized per token.
import { detokenizeOne } from "../../../core/text/tokenizer.ts";
import { chatBody, chatChunk, completionBody, completionChunk, SSE_DONE, sseData, usage, usageChunk, type ResponseMeta } from "../../../protocol/openai.ts";

export type Kind = "completion" | "chat";

/** The counts a finished request reports (a worker's summary line has them under these names). */
export interface AnswerTotals {
  prompt_tokens: number;
  completion_tokens: number;
  cached_tokens: number;
}

export interface StreamOptions {
  includeUsage: boolean;
  continuousUsage: boolean;
  /** The prompt's length, for usage on every chunk (continuous_usage_stats). */
  promptTokens: number;
}

/** A placeholder text that JSON-encodes to one known literal, split out of the serialized chunk. */
const MARK = "\u0001";
const MARK_JSON = JSON.stringify(MARK);

/** `pre` + JSON text + `post` is the chunk's JSON; `post` without its last `}` takes a usage field. */
function template(chunk: unknown): { pre: string; post: string } {
  const [pre, post] = JSON.stringify(chunk).split(MARK_JSON) as [string, string];
  return { pre, post };
}

/** The SSE events of one streamed answer, in order: tokenEvents as tokens come, then finishEvents or errorEvent. */
export class SseAnswer {
  private readonly first: { pre: string; post: string };
  private readonly next: { pre: string; post: string };
  private sent = 0;

  constructor(
    readonly kind: Kind,
    readonly meta: ResponseMeta,
    private readonly opts: StreamOptions,
  ) {
    if (kind === "chat") {
      this.first = template(chatChunk(meta, { role: "assistant", content: MARK }, null));
      this.next = template(chatChunk(meta, { content: MARK }, null));
    } else {
      this.first = this.next = template(completionChunk(meta, MARK, null));
    }
  }

  /** Tokens generated so far (what the events carried). */
  get completionTokens(): number {
    return this.sent;
  }

  /** One chunk per token, the first chat chunk naming the assistant role. */
  tokenEvents(ids: ArrayLike<number>): string {
    let out = "";
    for (let i = 0; i < ids.length; i++) {
      const t = this.sent === 0 ? this.first : this.next;
      this.sent++;
      const json = t.pre + JSON.stringify(detokenizeOne(ids[i]!)) + t.post;
      out += `data: ${this.opts.continuousUsage ? withUsage(json, this.opts.promptTokens, this.sent) : json}\n\n`;
    }
    return out;
  }

  /** The end of a finished stream: the finish chunk, the usage chunk (include_usage), [DONE]. */
  finishEvents(totals: AnswerTotals): string {
    const { kind, meta } = this;
    const last = JSON.stringify(kind === "chat" ? chatChunk(meta, {}, "length") : completionChunk(meta, "", "length"));
    let out = `data: ${this.opts.continuousUsage ? withUsage(last, this.opts.promptTokens, this.sent) : last}\n\n`;
    if (this.opts.includeUsage) out += sseData(usageChunk(meta, kind === "chat" ? "chat.completion.chunk" : "text_completion", usage(totals.prompt_tokens, totals.completion_tokens, totals.cached_tokens)));
    return out + SSE_DONE;
  }

  /** An error in the stream (OpenAI's error object as the event's data); no [DONE] follows. */
  errorEvent(body: unknown): string {
    return sseData(body);
  }
}

/** vLLM's per-chunk usage (continuous_usage_stats): counts so far, no details. */
function withUsage(chunkJson: string, prompt: number, completion: number): string {
  return `${chunkJson.slice(0, -1)},"usage":{"prompt_tokens":${prompt},"completion_tokens":${completion},"total_tokens":${prompt + completion}}}`;
}

/** A non-streamed answer: every token's text in one completion or chat body, with usage. */
export function wholeAnswerBody(kind: Kind, meta: ResponseMeta, ids: ArrayLike<number>, totals: AnswerTotals) {
  let text = "";
  for (let i = 0; i < ids.length; i++) text += detokenizeOne(ids[i]!);
  const u = usage(totals.prompt_tokens, totals.completion_tokens, totals.cached_tokens);
  return kind === "chat" ? chatBody(meta, text, "length", u) : completionBody(meta, text, "length", u);
}

export const SSE_HEADERS = { "content-type": "text/event-stream", "cache-control": "no-cache" } as const;
