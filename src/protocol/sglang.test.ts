import { describe, expect, test } from "bun:test";
import { BadRequest } from "./openai.ts";
import { getLoadBody, modelInfoBody, parseSglangGenerate, serverInfoBody, SGLANG_DEFAULT_MAX_NEW_TOKENS, sglangGenerateBody } from "./sglang.ts";

const limits = { maxOutputTokens: 100, maxPromptBytes: 10 };
const problem = (body: unknown) => {
  const r = parseSglangGenerate(body, limits);
  return r instanceof BadRequest ? `${r.param}: ${r.message}` : "ok";
};

describe("SGLang's shapes", () => {
  test("/get_load: per rank, requests running or waiting, those waiting, KV tokens; or the older {load}", () => {
    const ranks = [
      { running: 2, waiting: 1, kvTokens: 192 },
      { running: 0, waiting: 3, kvTokens: 0 },
    ];
    expect(getLoadBody("array", ranks, 7)).toEqual([
      { dp_rank: 0, num_reqs: 3, num_waiting_reqs: 1, num_tokens: 192 },
      { dp_rank: 1, num_reqs: 3, num_waiting_reqs: 3, num_tokens: 0 },
    ]);
    expect(getLoadBody("object", ranks, 7)).toEqual({ load: 7 });
  });

  test("/server_info and /model_info: the served model, its shape, no path a router would fetch a tokenizer from", () => {
    const m = { model: "m", maxModelLen: 4096, blockSize: 16, dpSize: 2, kvCapacityTokens: 2048, version: "1.2.3" };
    expect(serverInfoBody(m)).toEqual({ served_model_name: "m", is_embedding: false, dp_size: 2, tp_size: 1, page_size: 16, context_length: 4096, max_total_num_tokens: 2048, version: "1.2.3" });
    expect(serverInfoBody({ ...m, maxModelLen: undefined }).context_length).toBeNull();
    expect(modelInfoBody("llama", ["LlamaForCausalLM"])).toEqual({
      is_generation: true,
      preferred_sampling_params: null,
      weight_version: "default",
      has_image_understanding: false,
      has_audio_understanding: false,
      model_type: "llama",
      architectures: ["LlamaForCausalLM"],
    });
  });

  test("/generate's answer: text and ids so far, finish_reason and latency only at the end", () => {
    const meta = { id: "r", promptTokens: 5 };
    expect(sglangGenerateBody(meta, " a b", [1, 2], undefined)).toEqual({ text: " a b", output_ids: [1, 2], meta_info: { id: "r", finish_reason: null, prompt_tokens: 5, completion_tokens: 2, cached_tokens: 0 } });
    expect(sglangGenerateBody(meta, " a b c", [1, 2, 3], { cachedTokens: 4, e2eLatencyS: 0.25 })).toEqual({
      text: " a b c",
      output_ids: [1, 2, 3],
      meta_info: { id: "r", finish_reason: { type: "length", length: 3 }, prompt_tokens: 5, completion_tokens: 3, cached_tokens: 4, e2e_latency: 0.25 },
    });
  });
});

describe("parseSglangGenerate", () => {
  test("text or input_ids, max_new_tokens (default 128), stream, rid; fields a router adds pass", () => {
    expect(parseSglangGenerate({ text: "hi" }, limits)).toEqual({ prompt: { kind: "text", text: "hi" }, maxNewTokens: SGLANG_DEFAULT_MAX_NEW_TOKENS, stream: false, rid: undefined });
    expect(SGLANG_DEFAULT_MAX_NEW_TOKENS).toBe(128);
    expect(parseSglangGenerate({ input_ids: [3, 4], sampling_params: { max_new_tokens: 100, temperature: 0 }, stream: true, rid: "x", bootstrap_room: 7 }, limits)).toEqual({
      prompt: { kind: "tokens", ids: [3, 4] },
      maxNewTokens: 100,
      stream: true,
      rid: "x",
    });
    expect(parseSglangGenerate({ text: "a", sampling_params: null, stream: false, rid: null }, limits)).toMatchObject({ maxNewTokens: 128, stream: false, rid: undefined });
    expect(parseSglangGenerate({ text: "a", sampling_params: { max_new_tokens: null } }, limits)).toMatchObject({ maxNewTokens: 128 });
    expect(parseSglangGenerate({ text: "a", sampling_params: { max_new_tokens: 1 } }, limits)).toMatchObject({ maxNewTokens: 1 });
    expect(problem({ text: "x".repeat(10) })).toBe("ok"); // the limit itself is allowed
    expect(problem({ input_ids: [] })).toBe("ok"); // an empty prompt is the route's to refuse (no tokens)
  });

  test("each bad field is named", () => {
    expect(problem(null)).toBe("body: body must be a JSON object");
    expect(problem([])).toBe("body: body must be a JSON object");
    expect(problem("text")).toBe("body: body must be a JSON object");
    expect(problem({})).toBe("text: one of text (a string) or input_ids (token ids) is required");
    expect(problem({ text: "a", input_ids: [1] })).toBe("text: give one of text and input_ids, not both");
    expect(problem({ text: "x".repeat(11) })).toBe("text: text: longer than the limit of 10 bytes (--max-prompt-bytes)");
    expect(problem({ text: "éééééé" })).toBe("text: text: longer than the limit of 10 bytes (--max-prompt-bytes)"); // 12 bytes in 6 characters
    expect(problem({ text: ["a", "b"] })).toBe("text: text: a batch of prompts is not served by this worker; send one prompt per request");
    expect(problem({ input_ids: [[1], [2]] })).toBe("input_ids: input_ids: a batch of prompts is not served by this worker; send one prompt per request");
    expect(problem({ input_ids: ["a", "b"] })).toStartWith("input_ids: input_ids[0]: expected a token id");
    expect(problem({ input_ids: [1, "b"] })).toStartWith("input_ids: input_ids[1]: expected a token id");
    expect(problem({ text: 5 })).toBe("text: text: expected a string");
    expect(problem({ input_ids: "1 2" })).toBe("input_ids: input_ids: expected an array of token ids");
    expect(problem({ text: "a", sampling_params: [] })).toBe("sampling_params: sampling_params: expected an object");
    expect(problem({ text: "a", sampling_params: 3 })).toBe("sampling_params: sampling_params: expected an object");
    expect(problem({ text: "a", sampling_params: { max_new_tokens: 0 } })).toBe("sampling_params.max_new_tokens: sampling_params.max_new_tokens: expected an integer of at least 1, got 0");
    expect(problem({ text: "a", sampling_params: { max_new_tokens: 1.5 } })).toStartWith("sampling_params.max_new_tokens: sampling_params.max_new_tokens: expected an integer");
    expect(problem({ text: "a", sampling_params: { max_new_tokens: "5" } })).toStartWith("sampling_params.max_new_tokens: sampling_params.max_new_tokens: expected an integer");
    expect(problem({ text: "a", sampling_params: { max_new_tokens: 101 } })).toBe("sampling_params.max_new_tokens: sampling_params.max_new_tokens: 101 exceeds this server's limit of 100 (--max-tokens-limit)");
    expect(problem({ text: "a", stream: "yes" })).toBe("stream: stream: expected true or false");
    expect(problem({ text: "a", rid: 5 })).toBe("rid: rid: expected a string (one request id; batches are not served)");
    expect(problem({ text: "a", rid: ["a"] })).toBe("rid: rid: expected a string (one request id; batches are not served)");
  });
});
