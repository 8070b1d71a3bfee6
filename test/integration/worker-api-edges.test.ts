// The worker API's edges: injected faults act on it as on /v1/generate; bad input gets the
// frontend's answers (400 naming the field, 404 in vLLM's words, --max-prompt-bytes, the body
// deadline); vLLM's DP balancer without a header; /load; /reset_prefix_cache publishing
// AllBlocksCleared; each worker's URL in discovery; a port in use stops the start, naming it.
import { describe, expect, test } from "bun:test";
import { connect } from "node:net";
import { openFileDiscoveryStore } from "../../src/discovery/file-store.ts";
import { keys } from "../../src/discovery/keys.ts";
import type { WorkerRecord } from "../../src/protocol/records.ts";
import { startMocker } from "../../src/roles/mocker/index.ts";
import { cleanupList, heldPort, makeTempDir, waitFor } from "../harness.ts";
import { logger, mockerConfig } from "./mocker-kit.ts";
import { json, residency, startWorkers, tapRank } from "./worker-api-kit.ts";

const cleanups = cleanupList();
const MODEL = "mocker-engine";
const chat = (content: string, extra: Record<string, unknown> = {}) => ({ model: MODEL, messages: [{ role: "user", content }], max_tokens: 3, ...extra });

async function error(res: Response): Promise<{ status: number; message: string; param: unknown; code: unknown }> {
  const body = (await res.json()) as { error: { message: string; param: unknown; code: unknown } };
  return { status: res.status, ...body.error };
}

describe("worker API faults", () => {
  test("an http_error fault answers the worker API as it answers /v1/generate; a cut stream resets and frees the request", async () => {
    const m = await startWorkers(cleanups);
    const api = m.openaiUrls![0]!;
    const post = await json(`${m.httpUrl}/admin/faults`, { kind: "http_error", status: 503, count: 1, target: { worker: 0 } });
    expect(post.status).toBe(201);
    expect(await error(await json(`${api}/v1/chat/completions`, chat("hi")))).toMatchObject({ status: 503, code: "injected_fault" });
    expect((await json(`${api}/v1/chat/completions`, chat("hi"))).status).toBe(200); // count 1: spent

    expect((await json(`${m.httpUrl}/admin/faults`, { kind: "cut_stream", after_tokens: 2, count: 1, target: { worker: 0 } })).status).toBe(201);
    const res = await json(`${api}/v1/chat/completions`, chat("cut me", { max_tokens: 40, stream: true }));
    expect(res.status).toBe(200);
    let text = "";
    const read = (async () => {
      const decoder = new TextDecoder();
      for await (const chunk of res.body!) text += decoder.decode(chunk);
    })();
    await expect(read).rejects.toBeDefined();
    expect(text).not.toContain("[DONE]");
    expect(text.match(/^data: /gm)?.length).toBe(2);
    await waitFor(() => m.pool.inFlight === 0, { what: "the cut request to be cancelled in the engine" });
  });
});

describe("worker API input", () => {
  test("bad bodies, an unknown model, a prompt over --max-prompt-bytes, a bad rank header, wrong methods and routes", async () => {
    const m = await startWorkers(cleanups, ["--max-prompt-bytes", "64"]);
    const api = m.openaiUrls![0]!;
    expect(await error(await json(`${api}/v1/chat/completions`, chat("x", { max_tokens: -1 })))).toMatchObject({ status: 400, param: "max_tokens" });
    expect(await error(await json(`${api}/v1/chat/completions`, chat("x", { stream_options: { continuous_usage_stats: "yes" } })))).toMatchObject({ status: 400, param: "stream_options.continuous_usage_stats" });
    expect(await error(await json(`${api}/v1/chat/completions`, { ...chat("x"), model: "other" }))).toMatchObject({ status: 404, message: "The model `other` does not exist.", param: "model" });
    const long = await error(await json(`${api}/v1/completions`, { model: MODEL, prompt: "y".repeat(65) }));
    expect(long).toMatchObject({ status: 400, param: "prompt" });
    expect(long.message).toContain("--max-prompt-bytes");
    expect(await error(await fetch(`${api}/v1/completions`, { method: "POST", body: "{not json" }))).toMatchObject({ status: 400, param: "body" });
    const rank = await error(await json(`${api}/v1/chat/completions`, chat("x"), { "x-data-parallel-rank": "2" }));
    expect(rank).toMatchObject({ status: 400 });
    expect(rank.message).toContain("X-data-parallel-rank: rank 2 is out of range");
    expect((await json(`${api}/v1/chat/completions`, chat("x"), { "x-data-parallel-rank": "one" })).status).toBe(400);
    expect((await fetch(`${api}/v1/chat/completions`)).status).toBe(405);
    expect(await error(await fetch(`${api}/v1/generate`))).toMatchObject({ status: 404, code: "not_found" });
    expect(await (await fetch(`${api}/version`)).json()).toHaveProperty("version");
    expect([(await fetch(`${api}/health`)).status, (await fetch(`${api}/ping`, { method: "POST" })).status]).toEqual([200, 200]);
  });

  test("a body that stalls gets 408 after --body-timeout-ms and the connection is closed", async () => {
    const m = await startWorkers(cleanups, ["--body-timeout-ms", "150"]);
    const { hostname, port } = new URL(m.openaiUrls![1]!);
    const socket = connect({ host: hostname, port: Number(port) });
    cleanups.push(() => socket.destroy());
    let text = "";
    socket.on("data", (d) => (text += d.toString("latin1")));
    socket.on("error", () => {});
    const closed = new Promise<void>((resolve) => socket.on("close", () => resolve()));
    socket.write(`POST /v1/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n{"model": "m", "prompt": "hel`);
    await closed;
    expect(text).toStartWith("HTTP/1.1 408");
    expect(text).toContain("--body-timeout-ms");
  });
});

describe("worker API serving", () => {
  test("without the header, vLLM's balancer takes the rank with the lowest waiting × 4 + running; /load counts what is in flight", async () => {
    const m = await startWorkers(cleanups);
    const api = m.openaiUrls![1]!;
    // Slow decode keeps the first request in flight while the second arrives.
    const first = await json(`${api}/v1/completions`, { model: MODEL, prompt: [1, 2, 3], max_tokens: 200, stream: true });
    const second = await json(`${api}/v1/completions`, { model: MODEL, prompt: [4, 5, 6], max_tokens: 200, stream: true });
    expect([first.status, second.status]).toEqual([200, 200]);
    expect([first.headers.get("x-kvcr-dp-rank"), second.headers.get("x-kvcr-dp-rank")]).toEqual(["0", "1"]);
    expect(await (await fetch(`${api}/load`)).json()).toEqual({ server_load: 2 });
    expect(await (await fetch(`${m.openaiUrls![0]}/load`)).json()).toEqual({ server_load: 0 });
    await first.body!.cancel();
    await second.body!.cancel();
    await waitFor(async () => ((await (await fetch(`${api}/load`)).json()) as { server_load: number }).server_load === 0, { what: "the cancelled requests to leave /load" });
  });

  test("/reset_prefix_cache clears every rank of the worker and publishes AllBlocksCleared; the next request finds nothing cached", async () => {
    const m = await startWorkers(cleanups);
    const api = m.openaiUrls![0]!;
    const taps = [await tapRank(m, 0, 0, cleanups), await tapRank(m, 0, 1, cleanups)];
    const ask = async () => ((await (await json(`${api}/v1/completions`, { model: MODEL, prompt: [1, 2, 3, 4, 5, 6, 7, 8, 9], max_tokens: 2 }, { "x-data-parallel-rank": "0" })).json()) as { usage: { prompt_tokens_details: { cached_tokens: number } } }).usage;
    await ask();
    expect((await ask()).prompt_tokens_details.cached_tokens).toBe(8);
    const reset = await fetch(`${api}/reset_prefix_cache`, { method: "POST" });
    expect(reset.status).toBe(200);
    for (const t of taps) await t.drained();
    expect(taps.map((t) => t.events.at(-1)?.type)).toEqual(["AllBlocksCleared", "AllBlocksCleared"]);
    expect((await residency(m, 0, 0)).tiers.device).toEqual([]);
    expect((await ask()).prompt_tokens_details.cached_tokens).toBe(0);
    expect((await fetch(`${api}/reset_prefix_cache`)).status).toBe(405);
    // A rank with a request running keeps its cache (vLLM's engine refuses then), and says so.
    const running = await json(`${api}/v1/completions`, { model: MODEL, prompt: [1, 2, 3], max_tokens: 200, stream: true }, { "x-data-parallel-rank": "1" });
    const refused = await error(await fetch(`${api}/reset_prefix_cache`, { method: "POST" }));
    expect(refused).toMatchObject({ status: 409, code: "requests_running" });
    expect(refused.message).toContain("rank 1 (1 running)");
    await running.body!.cancel();
  });

  test("each worker's API URL is in its discovery record", async () => {
    await using dir = await makeTempDir("kvcr-worker-api-");
    const m = await startMocker(mockerConfig(["--num-workers", "3", "--openai-port-base", "0", "--discovery-dir", dir.path]), { logger, env: {} });
    cleanups.push(() => m.close());
    await m.ready;
    const store = await openFileDiscoveryStore({ dir: dir.path });
    cleanups.push(() => store.close());
    const records = new Map((await store.list(keys.kindPrefix("dynamo", "worker"))).map((e) => [(e.value as WorkerRecord).worker_index, e.value as WorkerRecord]));
    const urls = m.workers.map((w) => records.get(w.index)?.openai_url);
    expect(urls).toEqual([...m.openaiUrls!]);
    expect(new Set(m.ports.openai as number[]).size).toBe(3);
    for (const url of urls) expect((await fetch(`${url}/health`)).status).toBe(200);
  });

  test("a worker API port in use stops the mocker before it serves, naming the port and the flag", async () => {
    using held = heldPort();
    await using dir = await makeTempDir("kvcr-worker-api-");
    const start = startMocker(mockerConfig(["--num-workers", "2", "--openai-ports", `0,${held.port}`, "--discovery-dir", dir.path]), { logger, env: {} });
    const err = (await start.then(() => undefined, (e: unknown) => e)) as Error;
    expect(err.message).toContain(`cannot serve worker 1's OpenAI API (--openai-ports, worker 1) on 127.0.0.1:${held.port}: port ${held.port} is in use`);
  });
});
