// The routes of SGLang's server the SGLang-family routers call on a worker: /get_load in both
// shapes (per rank while requests run), /server_info and /model_info in both spellings,
// /health_generate, /flush_cache clearing the prefix cache with AllBlocksCleared published (and
// refusing while requests hold blocks), and SGLang's native /generate, whole and streamed, with
// its bad input named.
import { describe, expect, test } from "bun:test";
import { cleanupList, waitFor } from "../harness.ts";
import { json, residency, startWorkers, tapRank } from "./worker-api-kit.ts";

const cleanups = cleanupList();
const MODEL = "mocker-engine";

describe("SGLang's routes on the worker API", () => {
  test("/get_load counts each rank's requests and the tokens they hold; --get-load-format object is {load}", async () => {
    const m = await startWorkers(cleanups);
    const api = m.openaiUrls![0]!;
    expect(await (await fetch(`${api}/get_load`)).json()).toEqual([
      { dp_rank: 0, num_reqs: 0, num_waiting_reqs: 0, num_tokens: 0 },
      { dp_rank: 1, num_reqs: 0, num_waiting_reqs: 0, num_tokens: 0 },
    ]);
    const running = await json(`${api}/v1/completions`, { model: MODEL, prompt: [1, 2, 3, 4, 5, 6, 7, 8, 9], max_tokens: 200, stream: true }, { "x-data-parallel-rank": "1" });
    await waitFor(async () => ((await (await fetch(`${api}/get_load`)).json()) as { num_tokens: number }[])[1]!.num_tokens > 0, { what: "rank 1's blocks in /get_load" });
    const [r0, r1] = (await (await fetch(`${api}/get_load`)).json()) as { num_reqs: number; num_tokens: number }[];
    expect([r0!.num_reqs, r1!.num_reqs]).toEqual([0, 1]);
    expect(r1!.num_tokens % 4).toBe(0); // whole blocks of 4 tokens
    expect(r1!.num_tokens).toBeGreaterThanOrEqual(12);
    await running.body!.cancel();
    expect((await fetch(`${api}/get_load`, { method: "POST" })).status).toBe(405);

    const o = await startWorkers(cleanups, ["--get-load-format", "object"]);
    expect(await (await fetch(`${o.openaiUrls![1]}/get_load`)).json()).toEqual({ load: 0 });
  });

  test("SGLang's data_parallel_rank (sglang-router --dp-aware) pins the rank as the header does; the header wins; a bad one is a 400 naming the field", async () => {
    const m = await startWorkers(cleanups);
    const api = m.openaiUrls![0]!;
    const chat = (extra: Record<string, unknown>, headers: Record<string, string> = {}) => json(`${api}/v1/chat/completions`, { model: MODEL, messages: [{ role: "user", content: "hi" }], max_tokens: 2, ...extra }, headers);
    for (const rank of [1, 0]) expect((await chat({ data_parallel_rank: rank })).headers.get("x-kvcr-dp-rank")).toBe(String(rank));
    expect((await json(`${api}/generate`, { text: "hi", sampling_params: { max_new_tokens: 2 }, data_parallel_rank: 1 })).headers.get("x-kvcr-dp-rank")).toBe("1");
    expect((await chat({ data_parallel_rank: 1 }, { "x-data-parallel-rank": "0" })).headers.get("x-kvcr-dp-rank")).toBe("0");
    for (const bad of [2, -1, "1", 0.5]) {
      const res = await chat({ data_parallel_rank: bad });
      const e = ((await res.json()) as { error: { param: string; message: string } }).error;
      expect([res.status, e.param]).toEqual([400, "data_parallel_rank"]);
    }
  });

  test("/server_info and /model_info, old and new spellings, name the served model and no path; /health_generate is the worker's health", async () => {
    const m = await startWorkers(cleanups);
    const api = m.openaiUrls![1]!;
    for (const path of ["/server_info", "/get_server_info"]) {
      const info = (await (await fetch(`${api}${path}`)).json()) as Record<string, unknown>;
      expect(info).toMatchObject({ served_model_name: MODEL, dp_size: 2, page_size: 4, max_total_num_tokens: 256 });
      expect(info).not.toHaveProperty("model_path");
      expect(info).not.toHaveProperty("tokenizer_path");
    }
    for (const path of ["/model_info", "/get_model_info"]) expect(await (await fetch(`${api}${path}`)).json()).toMatchObject({ is_generation: true, model_type: "llama", architectures: ["LlamaForCausalLM"] });
    expect((await fetch(`${api}/health_generate`)).status).toBe(200);
  });

  test("/flush_cache clears every rank and publishes AllBlocksCleared; while a request runs it answers 400 naming the rank", async () => {
    const m = await startWorkers(cleanups);
    const api = m.openaiUrls![0]!;
    const taps = [await tapRank(m, 0, 0, cleanups), await tapRank(m, 0, 1, cleanups)];
    await json(`${api}/v1/completions`, { model: MODEL, prompt: [1, 2, 3, 4, 5, 6, 7, 8, 9], max_tokens: 2 }, { "x-data-parallel-rank": "0" }).then((r) => r.json());
    expect((await residency(m, 0, 0)).tiers.device.length).toBeGreaterThan(0);
    const flushed = await fetch(`${api}/flush_cache`, { method: "POST" });
    expect(flushed.status).toBe(200);
    expect(await flushed.text()).toStartWith("Cache flushed.");
    for (const t of taps) await t.drained();
    expect(taps.map((t) => t.events.at(-1)?.type)).toEqual(["AllBlocksCleared", "AllBlocksCleared"]);
    expect((await residency(m, 0, 0)).tiers.device).toEqual([]);

    const running = await json(`${api}/v1/completions`, { model: MODEL, prompt: [1, 2, 3], max_tokens: 200, stream: true }, { "x-data-parallel-rank": "1" });
    const refused = await fetch(`${api}/flush_cache`, { method: "POST" });
    expect(refused.status).toBe(400);
    expect(await refused.text()).toContain("rank 1 (1 running)");
    await running.body!.cancel();
  });

  test("/generate answers SGLang's body, whole and streamed (text so far per chunk, then [DONE]), through the same engine (cached tokens)", async () => {
    const m = await startWorkers(cleanups);
    const api = m.openaiUrls![0]!;
    const ids = [11, 12, 13, 14, 15, 16, 17, 18, 19];
    const ask = async () => (await (await json(`${api}/generate`, { input_ids: ids, sampling_params: { max_new_tokens: 3, temperature: 0 }, rid: "r-1" }, { "x-data-parallel-rank": "0" })).json()) as Record<string, any>;
    const first = await ask();
    expect(first.output_ids).toHaveLength(3);
    expect(typeof first.text).toBe("string");
    expect(first.meta_info).toMatchObject({ id: "r-1", finish_reason: { type: "length", length: 3 }, prompt_tokens: 9, completion_tokens: 3, cached_tokens: 0 });
    expect((await ask()).meta_info.cached_tokens).toBe(8);

    const res = await json(`${api}/generate`, { text: "one two three", sampling_params: { max_new_tokens: 4 }, stream: true });
    expect(res.headers.get("content-type")).toContain("text/event-stream");
    const events = (await res.text()).split("\n\n").filter((e) => e.startsWith("data: ")).map((e) => e.slice(6));
    expect(events.at(-1)).toBe("[DONE]");
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e) as { text: string; output_ids: number[]; meta_info: { finish_reason: unknown } });
    expect(chunks.at(-1)!.output_ids).toHaveLength(4);
    expect(chunks.at(-1)!.meta_info.finish_reason).toEqual({ type: "length", length: 4 });
    expect(chunks.slice(0, -1).every((c) => c.meta_info.finish_reason === null)).toBe(true);
    for (let i = 1; i < chunks.length; i++) expect(chunks[i]!.text.startsWith(chunks[i - 1]!.text)).toBe(true);
  });

  test("/generate on a stopping worker: the whole answer is a 503, the stream ends with the error event and [DONE]; its latency is this request's", async () => {
    const m = await startWorkers(cleanups);
    const api = m.openaiUrls![0]!;
    const quick = (await (await json(`${api}/generate`, { text: "hello", sampling_params: { max_new_tokens: 2 } })).json()) as { meta_info: { prompt_tokens: number; e2e_latency: number } };
    expect(quick.meta_info.prompt_tokens).toBe(1);
    expect(quick.meta_info.e2e_latency).toBeGreaterThan(0);
    expect(quick.meta_info.e2e_latency).toBeLessThan(30);
    const whole = json(`${api}/generate`, { input_ids: [1, 2, 3], sampling_params: { max_new_tokens: 150 } }, { "x-data-parallel-rank": "0" });
    const streamed = await json(`${api}/generate`, { input_ids: [4, 5, 6], sampling_params: { max_new_tokens: 150 }, stream: true }, { "x-data-parallel-rank": "1" });
    await waitFor(() => m.pool.inFlight === 2, { what: "both requests in the engines" });
    const closed = m.close();
    const answer = await whole;
    expect(answer.status).toBe(503);
    expect(((await answer.json()) as { error: { message: string } }).error.message).toBe("the worker is stopping: the request was cancelled");
    const events = (await streamed.text()).split("\n\n").filter(Boolean);
    expect(events.at(-1)).toBe("data: [DONE]");
    expect(JSON.parse(events.at(-2)!.slice(6))).toMatchObject({ error: { message: "the worker is stopping: the request was cancelled", type: "service_unavailable" } });
    await closed;
  });

  test("/generate's bad input: no prompt, both prompts, a batch, bad sampling_params, over the output limit; GET is 405", async () => {
    const m = await startWorkers(cleanups, ["--max-model-len", "64"]);
    const api = m.openaiUrls![0]!;
    const problem = async (body: unknown) => {
      const res = await json(`${api}/generate`, body);
      const e = ((await res.json()) as { error: { message: string; param: string } }).error;
      return { status: res.status, param: e.param, message: e.message };
    };
    expect(await problem({})).toMatchObject({ status: 400, param: "text" });
    expect(await problem({ text: "a", input_ids: [1] })).toMatchObject({ status: 400, message: "give one of text and input_ids, not both" });
    expect((await problem({ text: ["a", "b"] })).message).toContain("a batch of prompts is not served");
    expect((await problem({ input_ids: [[1], [2]] })).message).toContain("a batch of prompts is not served");
    expect(await problem({ input_ids: [1, -2] })).toMatchObject({ status: 400, param: "input_ids" });
    expect(await problem({ text: "a", sampling_params: { max_new_tokens: 0 } })).toMatchObject({ status: 400, param: "sampling_params.max_new_tokens" });
    expect((await problem({ text: "a", sampling_params: { max_new_tokens: 10_000_000 } })).message).toContain("--max-tokens-limit");
    expect(await problem({ text: "a", stream: "yes" })).toMatchObject({ status: 400, param: "stream" });
    expect(await problem({ input_ids: [] })).toMatchObject({ status: 400, param: "input_ids", message: "input_ids: the prompt has no tokens" });
    expect(await problem({ text: "" })).toMatchObject({ status: 400, param: "text", message: "text: the prompt has no tokens" });
    expect(await problem({ input_ids: [1, 2, 3], sampling_params: { max_new_tokens: 62 } })).toMatchObject({ status: 400, param: "input_ids" });
    const rank = await json(`${api}/generate`, { text: "a", sampling_params: { max_new_tokens: 2 } }, { "x-data-parallel-rank": "5" });
    expect(rank.status).toBe(400);
    expect(((await rank.json()) as { error: { message: string } }).error.message).toContain("X-data-parallel-rank: rank 5 is out of range");
    expect((await json(`${api}/generate`, { input_ids: [1, 2, 3], sampling_params: { max_new_tokens: 61 } })).status).toBe(200); // 64 exactly
    expect((await fetch(`${api}/generate`)).status).toBe(405);
  });
});
