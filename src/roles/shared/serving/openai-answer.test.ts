// The shared OpenAI answer: spliced chunks equal the serialized objects, usage rides on every chunk
// only with continuous_usage_stats, the stream ends with the usage chunk and [DONE].
import { describe, expect, test } from "bun:test";
import { detokenizeOne } from "../../../core/text/tokenizer.ts";
import { chatChunk, completionChunk } from "../../../protocol/openai.ts";
import { SseParser as Parser } from "../../../protocol/openai-stream.ts";
import { SseAnswer, wholeAnswerBody } from "./openai-answer.ts";

const meta = { id: "chatcmpl-x", created: 7, model: 'm"odel' };
const events = (text: string) => new Parser().text(text);
const totals = { prompt_tokens: 5, completion_tokens: 2, cached_tokens: 4 };

describe("SseAnswer", () => {
  test("chat chunks equal the serialized chunk objects; the first names the role", () => {
    const a = new SseAnswer("chat", meta, { includeUsage: false, continuousUsage: false, promptTokens: 5 });
    const got = events(a.tokenEvents([3, 9]) + a.finishEvents(totals));
    expect(got).toEqual([
      JSON.stringify(chatChunk(meta, { role: "assistant", content: detokenizeOne(3) }, null)),
      JSON.stringify(chatChunk(meta, { content: detokenizeOne(9) }, null)),
      JSON.stringify(chatChunk(meta, {}, "length")),
      "[DONE]",
    ]);
  });

  test("completion chunks; include_usage adds the usage chunk with cached tokens before [DONE]", () => {
    const a = new SseAnswer("completion", meta, { includeUsage: true, continuousUsage: false, promptTokens: 5 });
    const got = events(a.tokenEvents([3]) + a.tokenEvents([9]) + a.finishEvents(totals)).map((e) => (e === "[DONE]" ? e : JSON.parse(e)));
    expect(got[0]).toEqual(completionChunk(meta, detokenizeOne(3), null));
    expect(got[2]).toEqual(completionChunk(meta, "", "length"));
    expect(got[3]).toEqual({ ...meta, object: "text_completion", choices: [], usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7, prompt_tokens_details: { cached_tokens: 4 } } });
    expect(got[4]).toBe("[DONE]");
    expect(a.completionTokens).toBe(2);
  });

  test("continuous_usage_stats: every chunk carries the counts so far", () => {
    const a = new SseAnswer("chat", meta, { includeUsage: true, continuousUsage: true, promptTokens: 5 });
    const got = events(a.tokenEvents([3, 9]) + a.finishEvents(totals)).slice(0, 3).map((e) => JSON.parse(e) as { usage: unknown });
    expect(got.map((c) => c.usage)).toEqual([
      { prompt_tokens: 5, completion_tokens: 1, total_tokens: 6 },
      { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 },
      { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 },
    ]);
  });

  test("an error event is the error object, with no [DONE]", () => {
    const a = new SseAnswer("chat", meta, { includeUsage: false, continuousUsage: false, promptTokens: 1 });
    expect(events(a.errorEvent({ error: { message: "x" } }))).toEqual(['{"error":{"message":"x"}}']);
  });
});

test("a whole answer is one body with every token's text and usage", () => {
  const body = wholeAnswerBody("chat", meta, [3, 9], totals);
  expect((body.choices[0] as { message: { content: string } }).message.content).toBe(detokenizeOne(3) + detokenizeOne(9));
  expect(body.usage).toEqual({ prompt_tokens: 5, completion_tokens: 2, total_tokens: 7, prompt_tokens_details: { cached_tokens: 4 } });
});
