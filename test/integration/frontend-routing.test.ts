// Frontend + real mockers on loopback (direct mode): kv routing beats round-robin on prefix reuse,
// a client that disconnects mid-stream cancels the request on the worker, and a worker that
// vanishes fails its in-flight request with 502 instead of leaving it hanging.
import { describe, expect, test } from "bun:test";
import { waitFor } from "../harness.ts";
import { indexedPrefix, startStack } from "./frontend-kit.ts";

const MOCKER = ["--block-size", "4", "--model-name", "m"];

async function completion(baseURL: string, prompt: number[], extra: Record<string, unknown> = {}): Promise<Response> {
  return fetch(`${baseURL}/completions`, { method: "POST", body: JSON.stringify({ model: "m", prompt, max_tokens: 1, ...extra }) });
}

describe("kv routing against round-robin, same workload", () => {
  test("kv reuses the shared prefixes round-robin scatters", async () => {
    // 7 prefixes over 4 workers: round-robin shows every prefix to every worker (7 × 16 blocks > 64).
    const prefixes = Array.from({ length: 7 }, (_, p) => Array.from({ length: 64 }, (_, i) => 10_000 * (p + 1) + i));
    const cached: Record<string, number> = {};
    for (const mode of ["kv", "round-robin"]) {
      // 4 workers × 64 G1 blocks: room for 4 of the 7 prefixes (16 blocks each) per worker.
      await using stack = await startStack({ mockers: [["--num-workers", "4", "--num-gpu-blocks-override", "64", ...MOCKER]], frontend: ["--router-mode", mode] });
      let sum = 0;
      for (let i = 0; i < 48; i++) {
        const prompt = [...prefixes[i % 7]!, 900_000 + i, 900_001 + i];
        const res = await completion(stack.baseURL, prompt);
        expect(res.status).toBe(200);
        sum += ((await res.json()) as { usage: { prompt_tokens_details: { cached_tokens: number } } }).usage.prompt_tokens_details.cached_tokens;
        // The next decision sees this request's blocks (events are asynchronous).
        await waitFor(() => indexedPrefix(stack.frontend, prompt) >= 16, { what: `request ${i}'s prefix in the index` });
      }
      cached[mode] = sum;
    }
    // kv: (nearly) every repeat of a prefix lands on its holder (41 repeats × 64 tokens).
    expect(cached.kv!).toBeGreaterThanOrEqual(35 * 64);
    expect(cached.kv!).toBeGreaterThan(cached["round-robin"]!);
  });
});

describe("prefix affinity under concurrent load", () => {
  test("requests of one prefix keep going to its holder while their siblings are in flight", async () => {
    // 3 prefixes × 16 blocks + 2 own tokens, 4 workers; 32 requests, 8 in flight at a time, each
    // decoding 32 tokens (at speedup 10), so siblings of a prefix overlap. Counting in-flight load per
    // distinct block, a sibling on the holder costs its 16 shared blocks once; counted per request,
    // it would cost more than a cold worker, and siblings would scatter.
    const prefixes = Array.from({ length: 3 }, (_, p) => Array.from({ length: 64 }, (_, i) => 10_000 * (p + 1) + i));
    const affinity: Record<string, number> = {};
    for (const mode of ["kv", "round-robin"]) {
      await using stack = await startStack({ mockers: [["--num-workers", "4", "--num-gpu-blocks-override", "64", "--speedup-ratio", "10", ...MOCKER]], frontend: ["--router-mode", mode, "--seed", "5"] });
      // Each prefix cached first, one request at a time. Equal costs go to a random worker; the
      // frontend's seed makes that one worker per prefix (two prefixes on one worker would rightly
      // spill siblings to the idle one once its load outweighs the cached prefix).
      const holders = new Set<string>();
      for (let p = 0; p < 3; p++) {
        const prompt = [...prefixes[p]!, 800_000 + p, 800_100 + p];
        const res = await completion(stack.baseURL, prompt);
        expect(res.status).toBe(200);
        holders.add(res.headers.get("x-kvcr-worker")!);
        await waitFor(() => indexedPrefix(stack.frontend, prompt) >= 16, { what: `prefix ${p} in the index` });
      }
      if (mode === "kv") expect(holders.size).toBe(3);
      const served = prefixes.map(() => new Map<string, number>());
      for (let wave = 0; wave < 4; wave++) {
        await Promise.all(
          Array.from({ length: 8 }, async (_, k) => {
            const p = (8 * wave + k) % 3;
            const res = await completion(stack.baseURL, [...prefixes[p]!, 900_000 + 8 * wave + k, 900_100 + k], { max_tokens: 32 });
            expect(res.status).toBe(200);
            await res.arrayBuffer();
            const w = res.headers.get("x-kvcr-worker")!;
            served[p]!.set(w, (served[p]!.get(w) ?? 0) + 1);
          }),
        );
      }
      // Affinity: the share of each prefix's requests served by its most-used worker.
      affinity[mode] = served.reduce((sum, m) => sum + Math.max(...m.values()), 0) / 32;
    }
    expect(affinity.kv!).toBeGreaterThanOrEqual(0.75);
    expect(affinity.kv!).toBeGreaterThan(affinity["round-robin"]! + 0.2);
  });
});

describe("approximate mode (--no-router-kv-events)", () => {
  test("with no event feed followed, the decisions themselves make the prefix sticky", async () => {
    const prefix = Array.from({ length: 64 }, (_, i) => 50_000 + i);
    await using stack = await startStack({
      mockers: [["--num-workers", "3", "--num-gpu-blocks-override", "64", ...MOCKER]],
      frontend: ["--router-mode", "kv", "--no-router-kv-events"],
      expectRelays: false,
    });
    const served = new Set<string>();
    for (let i = 0; i < 6; i++) {
      const res = await completion(stack.baseURL, [...prefix, 900_000 + i]);
      expect(res.status).toBe(200);
      served.add(res.headers.get("x-kvcr-worker")!);
      await res.arrayBuffer();
    }
    expect(served.size).toBe(1);
    expect(stack.frontend.direct.connectedCount()).toBe(0);
    // What the index holds is the router's prediction: the 16 prefix blocks on the one worker.
    expect(indexedPrefix(stack.frontend, [...prefix, 1])).toBe(16);
  });
});

describe("request lifecycle through the frontend", () => {
  test("a client that disconnects mid-stream cancels the request on the worker", async () => {
    // Real time: 20,000 tokens take far longer than the test.
    await using stack = await startStack({ mockers: [["--num-workers", "1", "--speedup-ratio", "1", ...MOCKER]] });
    const mocker = stack.mockers[0]!;
    const ctrl = new AbortController();
    const res = await fetch(`${stack.baseURL}/completions`, {
      method: "POST",
      body: JSON.stringify({ model: "m", prompt: [1, 2, 3, 4, 5], max_tokens: 20_000, stream: true }),
      signal: ctrl.signal,
    });
    const reader = res.body!.getReader();
    await reader.read();
    expect(mocker.pool.inFlight).toBe(1);
    ctrl.abort();
    await waitFor(() => mocker.pool.inFlight === 0, { what: "the worker to cancel the request" });
    await waitFor(() => stack.frontend.state.workerList()[0]!.inflight.size === 0, { what: "the frontend to release it" });
  });

  test("a worker that vanishes fails its in-flight request with 502", async () => {
    await using stack = await startStack({ mockers: [["--num-workers", "1", "--speedup-ratio", "1", ...MOCKER]] });
    const pending = completion(stack.baseURL, [1, 2, 3, 4, 5], { max_tokens: 20_000 });
    await waitFor(() => stack.mockers[0]!.pool.inFlight === 1, { what: "the request on the worker" });
    await stack.mockers[0]!.close();
    const res = await pending;
    expect(res.status).toBe(502);
    const body = (await res.json()) as { error: { type: string; message: string } };
    expect(body.error.type).toBe("server_error");
    await waitFor(() => stack.frontend.state.workerCount === 0, { what: "the worker to leave routing" });
    expect((await completion(stack.baseURL, [1])).status).toBe(503);
  });
});
