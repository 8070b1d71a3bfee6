import { describe, expect, test } from "bun:test";
import { GenerateLineReader, parseGenerateBody, parseGenerateRequest, summaryLine, tokenLine } from "./generate.ts";

const limits = { maxPromptTokens: 1000, maxOutputTokens: 100 };

describe("POST /v1/generate bodies", () => {
  test("a valid body", () => {
    const r = parseGenerateRequest({ worker: 1, dp_rank: 0, token_ids: [1, 2, 3], max_tokens: 4, request_id: "r1", kv_hint: { protocol_version: "0.1" } }, limits);
    expect(r).toEqual({ ok: true, value: { worker: 1, dpRank: 0, tokenIds: [1, 2, 3], maxTokens: 4, requestId: "r1", kvHint: { protocol_version: "0.1" } } });
  });

  test("max_tokens at the limit and a 256-character lora_name are accepted; 257 characters are not", () => {
    expect(parseGenerateRequest({ worker: 0, token_ids: [1], max_tokens: 100 }, limits).ok).toBe(true);
    expect(parseGenerateRequest({ worker: 0, token_ids: [1], max_tokens: 1, lora_name: "l".repeat(256) }, limits).ok).toBe(true);
    expect(parseGenerateRequest({ worker: 0, token_ids: [1], max_tokens: 1, lora_name: "l".repeat(257) }, limits).ok).toBe(false);
  });

  test("dp_rank defaults to 0", () => {
    const r = parseGenerateRequest({ worker: 0, token_ids: [1], max_tokens: 1 }, limits);
    expect(r.ok && r.value.dpRank).toBe(0);
  });

  test.each([
    [null, "body must be a JSON object"],
    [[1], "body must be a JSON object"],
    [{ worker: 0, token_ids: [1], max_tokens: 1, extra: 1 }, 'unknown field "extra"'],
    [{ token_ids: [1], max_tokens: 1 }, "worker: expected a non-negative integer, got undefined"],
    [{ worker: -1, token_ids: [1], max_tokens: 1 }, "worker: expected a non-negative integer, got -1"],
    [{ worker: 0, dp_rank: 1.5, token_ids: [1], max_tokens: 1 }, "dp_rank: expected a non-negative integer, got 1.5"],
    [{ worker: 0, token_ids: [], max_tokens: 1 }, "token_ids: expected a non-empty array of token ids, got []"],
    [{ worker: 0, token_ids: "abc", max_tokens: 1 }, 'token_ids: expected a non-empty array of token ids, got "abc"'],
    [{ worker: 0, token_ids: [1, "x"], max_tokens: 1 }, 'token_ids[1]: expected an integer from 0 to 4294967295, got "x"'],
    [{ worker: 0, token_ids: [2 ** 32], max_tokens: 1 }, "token_ids[0]: expected an integer from 0 to 4294967295, got 4294967296"],
    [{ worker: 0, token_ids: new Array(1001).fill(1), max_tokens: 1 }, "token_ids: 1001 tokens exceed the limit of 1000"],
    [{ worker: 0, token_ids: [1], max_tokens: 0 }, "max_tokens: expected an integer from 1 to 100, got 0"],
    [{ worker: 0, token_ids: [1], max_tokens: 101 }, "max_tokens: expected an integer from 1 to 100, got 101"],
    [{ worker: 0, token_ids: [1], max_tokens: 1, request_id: 5 }, "request_id: expected a string of 1 to 256 characters, got 5"],
    [{ worker: 0, token_ids: [1], max_tokens: 1, kv_hint: "x" }, 'kv_hint: expected a JSON object, got "x"'],
  ])("rejects %p", (body, problem) => {
    expect(parseGenerateRequest(body, limits)).toEqual({ ok: false, problem });
  });

  test("response lines", () => {
    expect(tokenLine(42)).toBe('{"token_id":42}\n');
    expect(JSON.parse(summaryLine({ finish_reason: "length", prompt_tokens: 3, cached_tokens: 0, host_loaded_tokens: 0, completion_tokens: 4 }))).toEqual({
      finish_reason: "length",
      prompt_tokens: 3,
      cached_tokens: 0,
      host_loaded_tokens: 0,
      completion_tokens: 4,
    });
  });

  test("response lines are read back whole or as chunks arrive: a line may span chunks, blank lines are skipped", () => {
    const summary = { finish_reason: "length" as const, prompt_tokens: 1, cached_tokens: 0, host_loaded_tokens: 0, completion_tokens: 2 };
    const text = `${tokenLine(7)}\n${tokenLine(8)}${summaryLine(summary).trimEnd()}`;
    const bytes = new TextEncoder().encode(text);
    expect(parseGenerateBody(bytes)).toEqual([{ token_id: 7 }, { token_id: 8 }, summary]);
    const reader = new GenerateLineReader();
    const got = [];
    for (let i = 0; i < bytes.length; i += 5) got.push(...reader.push(bytes.subarray(i, i + 5)));
    got.push(...reader.end());
    expect(got).toEqual([{ token_id: 7 }, { token_id: 8 }, summary]);
  });
});
