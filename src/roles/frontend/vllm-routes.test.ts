// The frontend's vLLM-shaped routes through the app (no port): model cards with root and
// max_model_len, GET /v1/models/{id} and its 404, /tokenize and /detokenize bodies exactly as vLLM
// answers them, /ping following /health, /version; malformed input gets OpenAI's error JSON.
import { describe, expect, test } from "bun:test";
import { app, ndjsonWorker, post, routingState, workerRecord } from "../../../test/routing/fake-fleet.ts";
import { applyChatTemplate, detokenize, tokenize } from "../../core/text/tokenizer.ts";
import { VERSION } from "../../lib/version.ts";

function frontend(records = [workerRecord("a", { model: "Qwen/Qwen3-0.6B", max_model_len: 4096 }), workerRecord("b", { model: "m" })]) {
  const state = routingState("round-robin");
  for (const r of records) state.putWorker(r);
  return app(state, ndjsonWorker());
}
const get = (path: string, method = "GET") => new Request(`http://frontend${path}`, { method });

async function openAiError(res: Response, status: number, code: string | null, param: string | null) {
  expect(res.status).toBe(status);
  const body = (await res.json()) as { error: Record<string, unknown> };
  expect(Object.keys(body)).toEqual(["error"]);
  expect(Object.keys(body.error).sort()).toEqual(["code", "message", "param", "type"]);
  expect(body.error.code).toBe(code);
  expect(body.error.param).toBe(param);
  return String(body.error.message);
}

describe("model cards", () => {
  test("/v1/models entries carry root (what vllm bench serve reads without --model) and max_model_len where advertised", async () => {
    const res = await frontend().fetch(get("/v1/models"));
    expect(await res.json()).toEqual({
      object: "list",
      data: [
        { id: "Qwen/Qwen3-0.6B", object: "model", created: 0, owned_by: "kvcr-mock", root: "Qwen/Qwen3-0.6B", parent: null, max_model_len: 4096 },
        { id: "m", object: "model", created: 0, owned_by: "kvcr-mock", root: "m", parent: null },
      ],
    });
  });

  test("GET /v1/models/{id}: one card, the id plain or URL-encoded; an unknown id is OpenAI's 404", async () => {
    const f = frontend();
    const card = { id: "Qwen/Qwen3-0.6B", object: "model", created: 0, owned_by: "kvcr-mock", root: "Qwen/Qwen3-0.6B", parent: null, max_model_len: 4096 };
    expect(await (await f.fetch(get("/v1/models/Qwen/Qwen3-0.6B"))).json()).toEqual(card);
    expect(await (await f.fetch(get("/v1/models/Qwen%2FQwen3-0.6B"))).json()).toEqual(card);
    const message = await openAiError(await f.fetch(get("/v1/models/nope")), 404, "model_not_found", "model");
    expect(message).toBe("The model `nope` does not exist.");
    await openAiError(await f.fetch(get("/v1/models/m", "POST")), 405, null, null);
    await openAiError(await f.fetch(get("/v1/models/%E0%A4%A")), 400, null, "model");
  });
});

describe("POST /tokenize and /detokenize", () => {
  test("a prompt: {count, max_model_len, tokens, token_strs: null}, the frontend's own token ids", async () => {
    const res = await frontend().fetch(post("/tokenize", { model: "Qwen/Qwen3-0.6B", prompt: "Hello, world!", add_special_tokens: false }));
    expect(res.status).toBe(200);
    // FNV-1a 32 of "Hello", ",", " world", "!" modulo 50,000 (tokenizer.test.ts checks them against a reference).
    expect(await res.json()).toEqual({ count: 4, max_model_len: 4096, tokens: [9851, 40635, 6637, 2540], token_strs: null });
  });

  test("messages: the chat template's tokens, with or without the generation prompt; return_token_strs", async () => {
    const f = frontend();
    const messages = [{ role: "user", content: [{ type: "text", text: "Hi there" }] }];
    // "<|im_start|>user\nHi there<|im_end|>\n<|im_start|>assistant\n": "<", "|", "im", "_", "start", "|", ">", "user", "\nHi", " there", …
    const im = [32539, 32219, 42827, 26030];
    const full = [...im, 18111, 32219, 37777, 1362, 12242, 44407, ...im, 21130, 32219, 37777, 44131, 32219, 42827, 26030, 18111, 32219, 37777, 15287, 22541];
    expect(tokenize(applyChatTemplate([{ role: "user", content: "Hi there" }]))).toEqual(full);
    const body = (await (await f.fetch(post("/tokenize", { model: "Qwen/Qwen3-0.6B", messages }))).json()) as { tokens: number[]; count: number };
    expect(body).toMatchObject({ count: full.length, tokens: full, max_model_len: 4096 });
    const bare = (await (await f.fetch(post("/tokenize", { model: "Qwen/Qwen3-0.6B", messages, add_generation_prompt: false }))).json()) as { tokens: number[] };
    expect(bare.tokens).toEqual([...full.slice(0, 17), 22541]); // the last piece is "\n", not "\n<"
    const strs = (await (await f.fetch(post("/tokenize", { prompt: "a b", return_token_strs: true }))).json()) as { tokens: number[]; token_strs: string[] };
    expect(strs.tokens).toEqual([2220, 679]);
    expect(strs.token_strs.join("")).toBe(detokenize(strs.tokens));
  });

  test("model is optional (the first served model's max_model_len); unknown for a model that advertises none", async () => {
    const f = frontend();
    expect(await (await f.fetch(post("/tokenize", { prompt: "x" }))).json()).toMatchObject({ count: 1, max_model_len: 4096 });
    expect(await (await f.fetch(post("/tokenize", { model: "m", prompt: "x" }))).json()).toMatchObject({ count: 1, max_model_len: null });
  });

  test("detokenize: {prompt}, the mock vocabulary's rendering; tokenize's answer round-trips through it", async () => {
    const f = frontend();
    const res = await f.fetch(post("/detokenize", { model: "m", tokens: [1, 2, 3] }));
    expect(await res.json()).toEqual({ prompt: " da fa ga" });
    const prompt = detokenize([7, 700, 7000]);
    expect(prompt).toBe(" na basa bafida");
    const again = (await (await f.fetch(post("/tokenize", { model: "m", prompt }))).json()) as { tokens: number[] };
    expect(again.tokens).toEqual([38374, 37318, 13472]); // the pseudo-words' own ids, not 7, 700, 7000
  });

  const bad: [string, string, unknown, number, string | null, string | null][] = [
    ["not JSON", "/tokenize", "{", 400, null, "body"],
    ["an array", "/detokenize", "[]", 400, null, "body"],
    ["unknown model", "/tokenize", { model: "zz", prompt: "x" }, 404, "model_not_found", "model"],
    ["unknown model (detokenize)", "/detokenize", { model: "zz", tokens: [] }, 404, "model_not_found", "model"],
    ["model a number", "/tokenize", { model: 1, prompt: "x" }, 400, null, "model"],
    ["neither prompt nor messages", "/tokenize", { model: "m" }, 400, null, "prompt"],
    ["both prompt and messages", "/tokenize", { prompt: "x", messages: [{ role: "user", content: "y" }] }, 400, null, "messages"],
    ["prompt token ids", "/tokenize", { prompt: [1, 2] }, 400, null, "prompt"],
    ["bad message", "/tokenize", { messages: [{ content: "y" }] }, 400, null, "messages[0].role"],
    ["add_special_tokens a string", "/tokenize", { prompt: "x", add_special_tokens: "no" }, 400, null, "add_special_tokens"],
    ["tokens missing", "/detokenize", { model: "m" }, 400, null, "tokens"],
    ["a negative token", "/detokenize", { tokens: [1, -1] }, 400, null, "tokens"],
    ["a fractional token", "/detokenize", { tokens: [1.5] }, 400, null, "tokens"],
  ];
  for (const [name, path, body, status, code, param] of bad) {
    test(`${name} → ${status}`, async () => {
      await openAiError(await frontend().fetch(post(path, body)), status, code, param);
    });
  }

  test("wrong method 405; a body over --max-request-bytes 413", async () => {
    const f = frontend();
    await openAiError(await f.fetch(get("/tokenize")), 405, null, null);
    await openAiError(await f.fetch(get("/detokenize")), 405, null, null);
    await openAiError(await f.fetch(post("/tokenize", { prompt: "x".repeat(5000) })), 413, "request_too_large", null);
  });
});

describe("/ping and /version", () => {
  test("GET and POST /ping answer as /health does, with an empty body", async () => {
    const healthy = frontend();
    for (const method of ["GET", "POST"]) {
      const res = await healthy.fetch(get("/ping", method));
      expect(res.status).toBe(200);
      expect(await res.text()).toBe("");
    }
    expect((await frontend([]).fetch(get("/ping"))).status).toBe(503);
    await openAiError(await healthy.fetch(get("/ping", "PUT")), 405, null, null);
  });

  test("GET /version: {version}", async () => {
    const res = await frontend().fetch(get("/version"));
    expect(await res.json()).toEqual({ version: VERSION });
    await openAiError(await frontend().fetch(get("/version", "POST")), 405, null, null);
  });
});
