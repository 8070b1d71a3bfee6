// Every mock worker as a vLLM OpenAI server of its own, in a mocker started in this process: the
// official `openai` client streams from a worker's port; a pinned rank's blocks land in that rank's
// residency and raw events; a request through the worker API yields exactly what the same request
// through /v1/generate yields on the same rank (events, residency, metrics); each worker's /metrics
// holds only its own series, in vLLM's labels. Faults, bad input and the rest: worker-api-edges.test.ts.
import { describe, expect, test } from "bun:test";
import OpenAI from "openai";
import { cleanupList } from "../harness.ts";
import { json, residency, series, startWorkers, tapRank } from "./worker-api-kit.ts";

const cleanups = cleanupList();
const MODEL = "mocker-engine";
const client = (url: string) => new OpenAI({ baseURL: `${url}/v1`, apiKey: "unused", maxRetries: 0 });
const PROMPT = [{ role: "user" as const, content: "Tell me about the cache of keys and values, at some length please." }];

describe("a worker's OpenAI API", () => {
  test("the openai client streams a chat from a worker's port; /v1/models has root; a repeat is served from cache", async () => {
    const m = await startWorkers(cleanups);
    const api = client(m.openaiUrls![1]!);
    const models = await api.models.list();
    expect(models.data).toEqual([{ id: MODEL, object: "model", created: 0, owned_by: "kvcr-mock", root: MODEL, parent: null, max_model_len: 131072 } as never]);

    const stream = await api.chat.completions.create({ model: MODEL, messages: PROMPT, max_tokens: 6, stream: true, stream_options: { include_usage: true } });
    let text = "";
    let chunks = 0;
    let usage: OpenAI.CompletionUsage | undefined;
    let finish: string | null | undefined;
    for await (const chunk of stream) {
      if (chunk.choices[0]?.delta.content) {
        text += chunk.choices[0].delta.content;
        chunks++;
      }
      if (chunk.choices[0]?.finish_reason) finish = chunk.choices[0].finish_reason;
      if (chunk.usage) usage = chunk.usage;
    }
    expect(chunks).toBe(6);
    expect(text.trim().split(" ")).toHaveLength(6);
    expect(finish).toBe("length");
    expect(usage).toMatchObject({ completion_tokens: 6, prompt_tokens_details: { cached_tokens: 0 } });
    // The prompt's token count is the frontend's, for the same text (one tokenizer).
    const tokenized = (await (await json(`${m.openaiUrls![1]}/tokenize`, { model: MODEL, messages: PROMPT })).json()) as { count: number };
    expect(usage!.prompt_tokens).toBe(tokenized.count);

    const again = await api.chat.completions.create({ model: MODEL, messages: PROMPT, max_tokens: 6 });
    expect(again.usage!.prompt_tokens_details!.cached_tokens).toBe(Math.floor(tokenized.count / 4) * 4);
    const completion = await api.completions.create({ model: MODEL, prompt: [1, 2, 3, 4, 5], max_tokens: 2 });
    expect(completion.usage).toMatchObject({ prompt_tokens: 5, completion_tokens: 2 });
  });

  test("a pinned rank's blocks are in that rank's residency and raw events; /metrics counts only this worker, in vLLM's labels", async () => {
    const m = await startWorkers(cleanups);
    const [r0, r1] = [await tapRank(m, 0, 0, cleanups), await tapRank(m, 0, 1, cleanups)];
    const api = client(m.openaiUrls![0]!);
    const r = await api.chat.completions.create({ model: MODEL, messages: PROMPT, max_tokens: 3 }, { headers: { "X-Data-Parallel-Rank": "1" } });
    await r1.drained();
    const stored = r1.events.flatMap((e) => (e.type === "BlockStored" ? e.blockHashes : []));
    expect(stored.length).toBeGreaterThanOrEqual(Math.floor(r.usage!.prompt_tokens / 4));
    expect(r0.events).toEqual([]);
    const truth = await residency(m, 0, 1);
    expect(truth.tiers.device.map((b) => BigInt(b.seq_hash)).sort()).toEqual([...stored].sort());
    expect((await residency(m, 0, 0)).tiers.device).toEqual([]);

    const mine = await series(m.openaiUrls![0]!);
    const other = await series(m.openaiUrls![1]!);
    expect(mine.get('vllm:prompt_tokens_total{engine="1",model_name="mocker-engine"}')).toBe(r.usage!.prompt_tokens);
    expect(mine.get('vllm:prompt_tokens_total{engine="0",model_name="mocker-engine"}')).toBe(0);
    expect(other.get('vllm:prompt_tokens_total{engine="1",model_name="mocker-engine"}')).toBe(0);
    expect(mine.get('vllm:request_success_total{engine="1",finished_reason="length",model_name="mocker-engine"}')).toBe(1);
    // Only vLLM's families and labels: engine per rank, model_name, and a family's own.
    const names = new Set([...mine.keys()].map((k) => k.split("{")[0]!));
    expect([...names].every((n) => n.startsWith("vllm:"))).toBe(true);
    const labels = new Set([...mine.keys()].flatMap((k) => [...k.matchAll(/([a-z_]+)="/g)].map((x) => x[1]!)));
    expect([...labels].sort()).toEqual(["block_size", "cache_dtype", "enable_prefix_caching", "engine", "finished_reason", "le", "model_name", "num_gpu_blocks", "reason", "sleep_state", "source"]);
  });

  test("the same request through the worker API and through /v1/generate, on the same rank, yields the same events, residency and counters", async () => {
    const m = await startWorkers(cleanups);
    const [viaApi, viaGenerate] = [await tapRank(m, 0, 0, cleanups), await tapRank(m, 1, 0, cleanups)];
    const tokens = ((await (await json(`${m.openaiUrls![0]}/tokenize`, { model: MODEL, prompt: "one two three four five six seven eight nine ten eleven" })).json()) as { tokens: number[] }).tokens;
    for (const maxTokens of [5, 7]) {
      const a = await json(`${m.openaiUrls![0]}/v1/completions`, { model: MODEL, prompt: tokens, max_tokens: maxTokens }, { "x-data-parallel-rank": "0" });
      expect(a.status).toBe(200);
      const b = await json(`${m.httpUrl}/v1/generate`, { worker: 1, dp_rank: 0, token_ids: tokens, max_tokens: maxTokens });
      expect(b.status).toBe(200);
      await Promise.all([a.text(), b.text()]);
    }
    await viaApi.drained();
    await viaGenerate.drained();
    expect(viaApi.events.length).toBeGreaterThan(0);
    expect(viaApi.events).toEqual(viaGenerate.events);
    expect((await residency(m, 0, 0)).tiers).toEqual((await residency(m, 1, 0)).tiers);
    // Counters and token histograms agree series by series (latency histograms are timing, not counts).
    const [one, two] = [await series(m.openaiUrls![0]!), await series(m.openaiUrls![1]!)];
    const counted = [...one.keys()].filter((k) => !/seconds|iteration_tokens|kv_cache_usage/.test(k));
    expect(counted.length).toBeGreaterThan(30);
    for (const k of counted) expect([k, two.get(k)]).toEqual([k, one.get(k)]);
    expect(one.get('vllm:prefix_cache_hits_total{engine="0",model_name="mocker-engine"}')).toBeGreaterThan(0);
  });
});
