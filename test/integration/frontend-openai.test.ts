// The official `openai` npm client, unchanged, against a frontend + 2 mockers started in this
// process (direct mode): chat and completions, streaming and not, usage with cached tokens on a
// repeated prefix, and the error statuses (unknown model, bad body, too large, no workers); over a
// raw socket, a stalled body (408) and one cut off mid-way (no 500, no error log).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import OpenAI from "openai";
import { connect, type Socket } from "node:net";
import { createLogger } from "../../src/lib/logger.ts";
import { waitFor } from "../harness.ts";
import { indexedPrefix, startStack, type Stack } from "./frontend-kit.ts";

let stack: Stack;
let client: OpenAI;
const MODEL = "mock-model";

beforeAll(async () => {
  stack = await startStack({
    mockers: [["--num-workers", "2", "--block-size", "4", "--num-gpu-blocks-override", "256", "--model-name", MODEL]],
    frontend: ["--router-mode", "kv"],
  });
  client = new OpenAI({ baseURL: stack.baseURL, apiKey: "unused", maxRetries: 0 });
});
afterAll(async () => {
  await stack?.[Symbol.asyncDispose]();
});

describe("openai client against kvcr-mock frontend", () => {
  test("models lists the workers' model", async () => {
    const models = await client.models.list();
    expect(models.data.map((m) => m.id)).toEqual([MODEL]);
  });

  test("chat, not streaming: assistant text and usage", async () => {
    const r = await client.chat.completions.create({ model: MODEL, messages: [{ role: "user", content: "Say hello to the mock." }], max_tokens: 5 });
    expect(r.object).toBe("chat.completion");
    expect(r.choices[0]!.message.role).toBe("assistant");
    expect(r.choices[0]!.message.content!.trim().split(" ")).toHaveLength(5);
    expect(r.choices[0]!.finish_reason).toBe("length");
    expect(r.usage!.completion_tokens).toBe(5);
    expect(r.usage!.prompt_tokens).toBeGreaterThan(5);
    expect(r.usage!.total_tokens).toBe(r.usage!.prompt_tokens + 5);
  });

  test("max_completion_tokens is honoured", async () => {
    const r = await client.chat.completions.create({ model: MODEL, messages: [{ role: "user", content: "x" }], max_completion_tokens: 3 });
    expect(r.usage!.completion_tokens).toBe(3);
  });

  test("completions with a token-id prompt, used as is", async () => {
    const prompt = Array.from({ length: 10 }, (_, i) => 7 + i);
    const r = await client.completions.create({ model: MODEL, prompt, max_tokens: 4 });
    expect(r.object).toBe("text_completion");
    expect(r.usage!.prompt_tokens).toBe(10);
    expect(r.usage!.completion_tokens).toBe(4);
    expect(r.choices[0]!.text.length).toBeGreaterThan(0);
  });

  test("streaming chat with include_usage: deltas, a finish chunk, a usage chunk, then [DONE]", async () => {
    const stream = await client.chat.completions.create({ model: MODEL, messages: [{ role: "user", content: "stream please" }], max_tokens: 6, stream: true, stream_options: { include_usage: true } });
    let text = "";
    const finishes: (string | null)[] = [];
    let usage: OpenAI.CompletionUsage | undefined | null;
    for await (const chunk of stream) {
      expect(chunk.object).toBe("chat.completion.chunk");
      if (chunk.choices.length > 0) {
        text += chunk.choices[0]!.delta.content ?? "";
        finishes.push(chunk.choices[0]!.finish_reason);
      }
      if (chunk.usage) usage = chunk.usage;
    }
    expect(text.trim().split(" ")).toHaveLength(6);
    expect(finishes.at(-1)).toBe("length");
    expect(usage!.completion_tokens).toBe(6);
  });

  test("streaming completions end with data: [DONE] on the wire", async () => {
    const res = await fetch(`${stack.baseURL}/completions`, { method: "POST", body: JSON.stringify({ model: MODEL, prompt: "abc def", max_tokens: 2, stream: true }) });
    expect(res.headers.get("content-type")).toBe("text/event-stream");
    const body = await res.text();
    expect(body.endsWith("data: [DONE]\n\n")).toBe(true);
    expect(body.split("\n\n").filter(Boolean)).toHaveLength(4); // 2 tokens, finish, [DONE]
    const sdk = await client.completions.create({ model: MODEL, prompt: "abc def", max_tokens: 2, stream: true });
    let n = 0;
    for await (const c of sdk) if (c.choices[0]?.text) n++;
    expect(n).toBe(2);
  });

  test("a repeated prefix reports cached tokens", async () => {
    const prompt = Array.from({ length: 64 }, (_, i) => 5000 + i);
    const first = await client.completions.create({ model: MODEL, prompt, max_tokens: 1 });
    expect(first.usage!.prompt_tokens_details?.cached_tokens ?? 0).toBe(0);
    await waitFor(() => indexedPrefix(stack.frontend, prompt) === 16, { what: "the prompt's 16 blocks in the frontend's index" });
    const again = await client.completions.create({ model: MODEL, prompt: [...prompt, 1, 2, 3, 4], max_tokens: 1 });
    // kv routing sends it to the worker that holds the 16 blocks: all of them are cached.
    expect(again.usage!.prompt_tokens_details!.cached_tokens).toBe(64);
  });

  test("unknown model: 404 NotFoundError", async () => {
    const err = await client.chat.completions.create({ model: "nope", messages: [{ role: "user", content: "x" }] }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.NotFoundError);
    expect((err as InstanceType<typeof OpenAI.NotFoundError>).code).toBe("model_not_found");
  });

  test("bad body: 400 BadRequestError naming the field", async () => {
    const err = await client.chat.completions.create({ model: MODEL, messages: [{ role: "user", content: "x" }], max_tokens: -1 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect((err as InstanceType<typeof OpenAI.BadRequestError>).param).toBe("max_tokens");
    expect((err as Error).message).toContain("max_tokens");
  });

  test("too large: 413", async () => {
    const huge = "word ".repeat(3 * 1024 * 1024);
    const err = await client.completions.create({ model: MODEL, prompt: huge, max_tokens: 1 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.APIError);
    expect((err as InstanceType<typeof OpenAI.APIError>).status).toBe(413);
    expect((err as Error).message).toContain("--max-request-bytes");
    // Still serving.
    expect((await client.models.list()).data).toHaveLength(1);
  });
});

describe("openai client against a frontend with no workers", () => {
  test("with no workers, a completion gets 503 in the OpenAI error shape and /health 503", async () => {
    await using empty = await startStack({ mockers: [], namespace: "empty" });
    const c = new OpenAI({ baseURL: empty.baseURL, apiKey: "unused", maxRetries: 0 });
    const err = await c.chat.completions.create({ model: MODEL, messages: [{ role: "user", content: "x" }] }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.InternalServerError);
    expect((err as InstanceType<typeof OpenAI.APIError>).status).toBe(503);
    expect((err as InstanceType<typeof OpenAI.APIError>).code).toBe("no_workers");
    expect((await fetch(`${empty.frontend.url}/health`)).status).toBe(503);
  });
});

describe("request bodies over a real socket", () => {
  /** Sends `head` and the first bytes of a body it declares longer, then `then(socket)`; resolves with everything the server sent until it closed or `waitMs`. */
  async function partialBody(url: string, then: (s: Socket) => void, waitMs: number): Promise<{ text: string; closed: boolean }> {
    const { hostname, port } = new URL(url);
    const socket = connect({ host: hostname, port: Number(port) });
    let text = "";
    let closed = false;
    socket.on("data", (d) => (text += d.toString("latin1")));
    socket.on("error", () => {});
    const done = new Promise<void>((resolve) => socket.on("close", () => ((closed = true), resolve())));
    await new Promise<void>((resolve) => socket.on("connect", () => resolve()));
    socket.write(`POST /v1/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n{"model": "m", "prompt": "hel`);
    then(socket);
    await Promise.race([done, Bun.sleep(waitMs)]);
    socket.destroy();
    return { text, closed };
  }

  test("a body that stalls gets 408 after --body-timeout-ms and the connection is closed", async () => {
    await using s = await startStack({ mockers: [], namespace: "slow-body", frontend: ["--body-timeout-ms", "150"] });
    const { text, closed } = await partialBody(s.frontend.url, () => {}, 3000);
    expect(text).toStartWith("HTTP/1.1 408");
    expect(text).toContain('"code":"request_timeout"');
    expect(text).toContain("--body-timeout-ms");
    expect(closed).toBe(true);
  });

  test("a client that aborts mid-body: no 500 and no error log line", async () => {
    const lines: string[] = [];
    const stream = { write: (t: string) => (lines.push(t), true) } as unknown as NodeJS.WritableStream;
    const frontendLogger = createLogger({ level: "debug", stream, format: "json" });
    await using s = await startStack({ mockers: [], namespace: "abort-body", frontendLogger });
    await partialBody(s.frontend.url, (socket) => setTimeout(() => socket.destroy(), 20), 200);
    await waitFor(() => lines.some((l) => l.includes("went away while sending its body")), { what: "the debug line" });
    expect(lines.filter((l) => (JSON.parse(l) as { level: string }).level === "error")).toEqual([]);
    const metrics = await (await fetch(`${s.frontend.url}/metrics`)).text();
    expect(metrics).not.toMatch(/status="500"/);
    expect(metrics).toMatch(/route="\/v1\/completions",status="499"/);
  });
});
