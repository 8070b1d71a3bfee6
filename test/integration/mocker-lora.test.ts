// LoRA adapters on the mocker's workers: --lora-modules (name=path and vLLM's JSON form) loaded at
// start, vLLM's load and unload routes with its bodies, answers and status codes, /v1/models cards
// with `parent`, discovery records that follow loads and unloads, unknown adapters refused in vLLM's
// words, BlockStored naming the adapter (decoded by an independent msgpack decoder), and
// vllm:lora_requests_info showing running and waiting adapters under --max-loras 1.
import { describe, expect, test } from "bun:test";
import { decode } from "@msgpack/msgpack";
import { openFileDiscoveryStore } from "../../src/discovery/file-store.ts";
import { keys } from "../../src/discovery/keys.ts";
import type { WorkerRecord } from "../../src/protocol/records.ts";
import { SubSocket } from "../../src/transport/zmtp/index.ts";
import { cleanupList, makeTempDir, waitFor } from "../harness.ts";
import { json, series, startWorkers } from "./worker-api-kit.ts";

const cleanups = cleanupList();
const MODULES = ["--lora-modules", "sql-lora=/adapters/sql", '{"name": "chat-lora", "path": "/adapters/chat lora", "base_model_name": "mocker-engine"}'];

async function lorasOf(discoveryDir: string, worker: number): Promise<string[] | undefined> {
  const store = await openFileDiscoveryStore({ dir: discoveryDir });
  try {
    const records = (await store.list(keys.kindPrefix("dynamo", "worker"))).map((e) => e.value as WorkerRecord);
    return records.find((r) => r.worker_index === worker)?.lora_adapters;
  } finally {
    await store.close();
  }
}

describe("LoRA adapters on the mocker", () => {
  test("models, load and unload with vLLM's answers, discovery following them, unknown adapters 404", async () => {
    const dir = await makeTempDir("kvcr-lora-disc-");
    cleanups.push(() => dir[Symbol.asyncDispose]());
    const m = await startWorkers(cleanups, [...MODULES, "--discovery-dir", dir.path]);
    const api = m.openaiUrls![0]!;
    const models = (await (await fetch(`${api}/v1/models`)).json()) as { data: { id: string; root: string; parent: string | null }[] };
    expect(models.data.map((c) => [c.id, c.root, c.parent])).toEqual([
      ["mocker-engine", "mocker-engine", null],
      ["sql-lora", "/adapters/sql", "mocker-engine"],
      ["chat-lora", "/adapters/chat lora", "mocker-engine"],
    ]);
    expect(await lorasOf(dir.path, 0)).toEqual(["sql-lora", "chat-lora"]);

    const load = await json(`${api}/v1/load_lora_adapter`, { lora_name: "new-lora", lora_path: "/adapters/new" });
    expect(load.status).toBe(200);
    expect(await load.text()).toBe("Success: LoRA adapter 'new-lora' added successfully.");
    await waitFor(async () => (await lorasOf(dir.path, 0))?.includes("new-lora") === true, { timeoutMs: 10_000, what: "the record to list new-lora" });
    expect(await lorasOf(dir.path, 1)).toEqual(["sql-lora", "chat-lora"]); // only worker 0 loaded it

    const again = await json(`${api}/v1/load_lora_adapter`, { lora_name: "new-lora", lora_path: "/adapters/new" });
    expect(again.status).toBe(400);
    expect(await again.json()).toEqual({ error: { message: "The lora adapter 'new-lora' has already been loaded.", type: "InvalidUserInput", param: null, code: 400 } });
    const missing = await json(`${api}/v1/load_lora_adapter`, { lora_name: "x" });
    expect(missing.status).toBe(400);
    expect(((await missing.json()) as { error: { message: string } }).error.message).toBe("Both 'lora_name' and 'lora_path' must be provided.");

    const gen = await json(`${api}/v1/completions`, { model: "new-lora", prompt: "hello adapter", max_tokens: 2 });
    expect(gen.status).toBe(200);
    expect(((await gen.json()) as { model: string }).model).toBe("new-lora");

    const unload = await json(`${api}/v1/unload_lora_adapter`, { lora_name: "new-lora" });
    expect(unload.status).toBe(200);
    expect(await unload.text()).toBe("Success: LoRA adapter 'new-lora' removed successfully.");
    await waitFor(async () => (await lorasOf(dir.path, 0))?.includes("new-lora") === false, { timeoutMs: 10_000, what: "the record to drop new-lora" });
    const unknown = await json(`${api}/v1/unload_lora_adapter`, { lora_name: "new-lora" });
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toEqual({ error: { message: "The lora adapter 'new-lora' cannot be found.", type: "NotFoundError", param: null, code: 404 } });
    expect((await json(`${api}/v1/unload_lora_adapter`, {})).status).toBe(400);

    const gone = await json(`${api}/v1/completions`, { model: "new-lora", prompt: "hello adapter", max_tokens: 2 });
    expect(gone.status).toBe(404);
    expect(((await gone.json()) as { error: { message: string } }).error.message).toBe("The model `new-lora` does not exist.");
    // The process's /v1/generate refuses it too, in the same words; the base model still serves.
    const raw = await json(`${m.httpUrl}/v1/generate`, { worker: 0, dp_rank: 0, token_ids: [1, 2, 3], max_tokens: 1, lora_name: "new-lora" });
    expect(raw.status).toBe(404);
    expect((await json(`${api}/v1/completions`, { model: "mocker-engine", prompt: "hi", max_tokens: 1 })).status).toBe(200);
  });

  test("BlockStored carries lora_id and lora_name, read by an independent msgpack decoder", async () => {
    const m = await startWorkers(cleanups, MODULES);
    const pub = m.outlets[0]!.publishers[0]!;
    const seen: Record<string, unknown>[] = [];
    const sub = new SubSocket();
    cleanups.push(() => sub.close());
    sub.onMessage((f) => {
      const [, events] = decode(f[2]!, { useBigInt64: true }) as [number, Record<string, unknown>[]];
      seen.push(...events);
    });
    sub.subscribe(m.workers[0]!.rawTopic);
    sub.connect(pub.endpoint);
    await waitFor(() => pub.subscriberCount() > 0, { timeoutMs: 10_000, what: "the subscription" });
    const res = await json(`${m.httpUrl}/v1/generate`, { worker: 0, dp_rank: 0, token_ids: Array.from({ length: 16 }, (_, i) => i + 1), max_tokens: 1, lora_name: "chat-lora" });
    expect(res.status).toBe(200);
    await res.text();
    await waitFor(() => seen.some((e) => e.type === "BlockStored"), { timeoutMs: 10_000, what: "a BlockStored" });
    const stored = seen.find((e) => e.type === "BlockStored")!;
    expect(stored.lora_name).toBe("chat-lora");
    expect(stored.lora_id).toBe(2); // the process's ids from 1, in --lora-modules order
    expect((stored.extra_keys as unknown[])[0]).toEqual(["chat-lora"]);
  });

  test("--max-loras 1 under load: one adapter runs, the other waits; vllm:lora_requests_info shows both", async () => {
    const m = await startWorkers(cleanups, [...MODULES, "--max-loras", "1", "--timing-model", "fixed", "--decode-ms", "20"]);
    const api = m.openaiUrls![0]!;
    const pinned = { "x-data-parallel-rank": "0" };
    const reqs = [
      json(`${api}/v1/completions`, { model: "sql-lora", prompt: "one", max_tokens: 40 }, pinned),
      json(`${api}/v1/completions`, { model: "chat-lora", prompt: "two", max_tokens: 40 }, pinned),
    ];
    let info: string | undefined;
    await waitFor(
      async () => {
        const s = await series(api);
        // Whichever arrived first runs; the other waits for it.
        info = [...s.keys()].find(
          (k) =>
            k.startsWith("vllm:lora_requests_info{") &&
            ((k.includes('running_lora_adapters="sql-lora"') && k.includes('waiting_lora_adapters="chat-lora"')) || (k.includes('running_lora_adapters="chat-lora"') && k.includes('waiting_lora_adapters="sql-lora"'))),
        );
        // The waiting one counts as deferred (vLLM's reason for a LoRA budget wait), in the same scrape.
        return info !== undefined && (s.get('vllm:num_requests_waiting_by_reason{engine="0",model_name="mocker-engine",reason="deferred"}') ?? 0) >= 1;
      },
      { timeoutMs: 10_000, what: "lora_requests_info with one adapter running and the other waiting" },
    );
    expect(info).toContain('max_lora="1"');
    for (const r of await Promise.all(reqs)) expect(r.status).toBe(200);
    const all = await series(m.httpUrl);
    expect(all.get('kvcr_mocker_lora_requests_total{lora_name="sql-lora"}')).toBe(1);
    expect(all.get('kvcr_mocker_lora_requests_total{lora_name="chat-lora"}')).toBe(1);
  });

  test("unloading an adapter lets its running request finish; a second load of a loaded one disturbs nothing", async () => {
    const m = await startWorkers(cleanups, [...MODULES, "--timing-model", "fixed", "--decode-ms", "10"]);
    const api = m.openaiUrls![0]!;
    const running = json(`${api}/v1/completions`, { model: "chat-lora", prompt: "a long answer", max_tokens: 30 });
    await waitFor(() => m.pool.inFlight === 1, { timeoutMs: 10_000, what: "the request to run" });
    expect((await json(`${api}/v1/load_lora_adapter`, { lora_name: "chat-lora", lora_path: "/elsewhere" })).status).toBe(400);
    expect((await json(`${api}/v1/unload_lora_adapter`, { lora_name: "chat-lora" })).status).toBe(200);
    const res = await running;
    expect(res.status).toBe(200);
    expect(((await res.json()) as { usage: { completion_tokens: number } }).usage.completion_tokens).toBe(30);
  });

  test("--lora-modules-per-worker loads each worker's share only (what up --lora-replicas writes)", async () => {
    const m = await startWorkers(cleanups, [...MODULES, "--lora-modules-per-worker", '[["chat-lora"], []]']);
    const ids = async (w: number) => ((await (await fetch(`${m.openaiUrls![w]!}/v1/models`)).json()) as { data: { id: string }[] }).data.map((c) => c.id);
    expect(await ids(0)).toEqual(["mocker-engine", "chat-lora"]);
    expect(await ids(1)).toEqual(["mocker-engine"]);
    expect((await json(`${m.openaiUrls![1]!}/v1/completions`, { model: "chat-lora", prompt: "x", max_tokens: 1 })).status).toBe(404);
  });

  test("a bad --lora-modules entry stops the start with the entry named", async () => {
    await expect(startWorkers(cleanups, ["--lora-modules", "sql-lora"])).rejects.toThrow('--lora-modules: got "sql-lora", expected name=path');
  });
});
