// LoRA adapters through the whole path: three mockers (one without adapters, two holding different
// ones) behind the frontend. Requests naming an adapter reach only workers that hold it; the same
// prompt under another adapter finds none of its blocks cached, under its own it does; a load on a
// worker's own API makes the frontend route that adapter there; unknown adapters are 404s.
import { describe, expect, test } from "bun:test";
import { cleanupList, waitFor } from "../harness.ts";
import { startStack } from "./frontend-kit.ts";

const cleanups = cleanupList();
const prompt = Array.from({ length: 64 }, (_, i) => 500 + i);

async function complete(baseURL: string, model: string, tokens = prompt): Promise<{ status: number; worker: string | null; cached: number; body: unknown }> {
  const res = await fetch(`${baseURL}/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model, prompt: tokens, max_tokens: 2 }) });
  const body = (await res.json()) as { usage?: { prompt_tokens_details?: { cached_tokens?: number } } };
  return { status: res.status, worker: res.headers.get("x-kvcr-worker"), cached: body.usage?.prompt_tokens_details?.cached_tokens ?? 0, body };
}

describe("LoRA adapters through the frontend", () => {
  test("adapter requests reach only holders, adapters keep their blocks apart, a runtime load joins routing", async () => {
    const common = ["--num-workers", "1", "--block-size", "16", "--openai-port-base", "0"];
    const stack = await startStack({
      mockers: [common, [...common, "--lora-modules", "sql-lora=/a/sql"], [...common, "--lora-modules", "sql-lora=/a/sql", "chat-lora=/a/chat"]],
    });
    cleanups.push(() => stack[Symbol.asyncDispose]());
    const [base, sqlOnly, both] = stack.mockers.map((m) => m.workers[0]!.workerId);
    const models = (await (await fetch(`${stack.baseURL}/models`)).json()) as { data: { id: string; parent: string | null }[] };
    expect(models.data.map((c) => [c.id, c.parent])).toEqual([
      ["mocker-engine", null],
      ["sql-lora", "mocker-engine"],
      ["chat-lora", "mocker-engine"],
    ]);

    const sqlWorkers = new Set<string | null>();
    for (let i = 1; i <= 6; i++) {
      const r = await complete(stack.baseURL, "sql-lora", prompt.map((t) => t + i * 1000));
      expect(r.status).toBe(200);
      sqlWorkers.add(r.worker);
    }
    for (const w of sqlWorkers) expect([sqlOnly, both]).toContain(w ?? "(no worker header)");
    const chat = await complete(stack.baseURL, "chat-lora");
    expect(chat.worker).toBe(both!);

    // On one worker (its own API, rank 0): the prompt chat-lora computed is no hit under sql-lora or the
    // base model, and a hit under each once it computed it itself (the last partial block never counts).
    const own = `${stack.mockers[2]!.openaiUrls![0]!}/v1`;
    expect((await complete(own, "chat-lora")).cached).toBe(48);
    expect((await complete(own, "sql-lora")).cached).toBe(0);
    expect((await complete(own, "mocker-engine")).cached).toBe(0);
    expect((await complete(own, "sql-lora")).cached).toBe(48);
    expect((await complete(own, "mocker-engine")).cached).toBe(48);
    // Through the frontend, sql-lora's cached prompt is found where it is.
    await waitFor(async () => (await complete(stack.baseURL, "sql-lora")).cached === 48, { timeoutMs: 10_000, what: "sql-lora's prompt routed to its cache" });

    const unknown = await complete(stack.baseURL, "nope-lora");
    expect(unknown.status).toBe(404);
    expect((unknown.body as { error: { message: string } }).error.message).toStartWith("The model `nope-lora` does not exist.");

    // A load on the base-only worker's own API: its record lists the adapter, and the frontend routes it there too.
    const api = stack.mockers[0]!.openaiUrls![0]!;
    const load = await fetch(`${api}/v1/load_lora_adapter`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ lora_name: "chat-lora", lora_path: "/a/chat" }) });
    expect(load.status).toBe(200);
    await waitFor(() => [...stack.frontend.state.lora.holdersOf("chat-lora")].includes(base!), { timeoutMs: 10_000, what: "the frontend to see chat-lora on the first worker" });
    const seen = new Set<string | null>();
    for (let i = 0; i < 8; i++) seen.add((await complete(stack.baseURL, "chat-lora", prompt.map((t) => t + 50_000 + i * 1000))).worker);
    for (const w of seen) expect([base, both]).toContain(w ?? "(no worker header)");
  });
});
