// OpenAI request validation at its bounds, against literals: the documented ranges are inclusive,
// a value shown in a message is cut after 40 characters, a one-element prompt list is its element.
import { describe, expect, test } from "bun:test";
import { BadRequest, parseChatRequest, parseCompletionRequest } from "./openai.ts";

const limits = { maxOutputTokens: 100, maxPromptBytes: 1000 };
const completion = (extra: Record<string, unknown>) => parseCompletionRequest({ model: "m", prompt: "hi", ...extra }, limits);
const problem = (r: unknown) => (r instanceof BadRequest ? r.message : undefined);

describe("completion requests", () => {
  test("inclusive bounds: logit_bias from -100 to 100, logprobs from 0 to 20", () => {
    expect(problem(completion({ logit_bias: { "5": -100, "6": 100 } }))).toBeUndefined();
    expect(problem(completion({ logit_bias: { "5": 100.5 } }))).toStartWith("logit_bias:");
    expect(problem(completion({ logit_bias: { "5": -100.5 } }))).toStartWith("logit_bias:");
    expect(problem(completion({ logprobs: 20 }))).toBeUndefined();
    expect(problem(completion({ logprobs: 0 }))).toBeUndefined();
    expect(problem(completion({ logprobs: 21 }))).toStartWith("logprobs:");
    expect(problem(completion({ presence_penalty: -2, frequency_penalty: 2 }))).toBeUndefined();
    expect(problem(completion({ presence_penalty: -2.5 }))).toStartWith("presence_penalty:");
  });

  test("n: 1 (or absent) only", () => {
    expect(problem(completion({ n: 1 }))).toBeUndefined();
    expect(problem(completion({ n: null }))).toBeUndefined();
    expect(problem(completion({ n: 2 }))).toBe("n: only 1 is supported, got 2");
  });

  test("a value of 40 characters is shown whole, a longer one cut to 37 and an ellipsis", () => {
    const forty = "x".repeat(38); // 40 as JSON, with its quotes
    expect(problem(completion({ stream_options: { include_usage: forty } }))).toBe(`stream_options.include_usage: expected true or false, got "${forty}"`);
    expect(problem(completion({ stream_options: { include_usage: `${forty}y` } }))).toBe(`stream_options.include_usage: expected true or false, got "${"x".repeat(36)}...`);
  });

  test("stream_options.include_usage takes true, false or null", () => {
    expect(completion({ stream: true, stream_options: { include_usage: true } })).toMatchObject({ includeUsage: true });
    expect(completion({ stream: true, stream_options: { include_usage: null } })).toMatchObject({ includeUsage: false });
  });

  test("a one-element prompt list is its element: text or token ids", () => {
    expect(completion({ prompt: ["hello"] })).toMatchObject({ prompt: { kind: "text", text: "hello" } });
    expect(completion({ prompt: [[1, 2]] })).toMatchObject({ prompt: { kind: "tokens", ids: [1, 2] } });
  });
});

describe("chat requests", () => {
  test("a message whose content is null or missing is an empty message", () => {
    const r = parseChatRequest({ model: "m", messages: [{ role: "system", content: null }, { role: "assistant" }, { role: "user", content: "q" }] }, limits);
    expect(problem(r)).toBeUndefined();
    expect((r as { messages: { content: string }[] }).messages.map((m) => m.content)).toEqual(["", "", "q"]);
  });
});
