// The routers teams deploy, in front of an `up` fleet of kvcr-mock workers (peers environment):
// sglang-router and vllm-router started from the shipped stack files, each policy serving 40 chat
// requests and seen at work — consistent_hash keeps a session on one worker, cache_aware sends a
// repeat to its holder (prefix-cache hits), power_of_two reads /get_load and avoids a worker kept
// busy behind its back, round_robin takes turns. A restarted mocker comes back on the same API
// ports and the router serves on; a router that exits at start fails `up` with its output.
import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { CLI_ENTRY, makeTempDir, pipeOutput, spawnChild, waitFor, withTimeout } from "../harness.ts";
import { PEERS_PYTHON, peersAvailable } from "../peers.ts";
import { chat, EXAMPLES, MODEL, startStack, stop, withPolicy, type Served, type Stack } from "./router-stack.ts";

const counts = (served: Served[]) => served.reduce((m, s) => m.set(s.worker, (m.get(s.worker) ?? 0) + 1), new Map<string, number>());
/** A prompt of several 64-token blocks, its own words per key. */
const longPrompt = (key: string) => Array.from({ length: 300 }, (_, i) => `${key}${i % 17}`).join(" ");

/** 40 requests: 4 long prompts asked 10 times each in turn; the repeats find their prompt cached on its holder. */
async function cacheAware(stack: Stack): Promise<void> {
  const served: Served[] = [];
  for (let round = 0; round < 10; round++) for (const key of ["alpha", "beta", "gamma", "delta"]) served.push(await chat(stack, longPrompt(key)));
  const repeats = served.slice(4);
  const hits = repeats.filter((s) => s.cached >= s.prompt - 64).length;
  expect(hits, JSON.stringify(served)).toBeGreaterThanOrEqual(30);
}

/** Worker 0 kept busy through its own API (the router cannot see those requests but through /get_load): power_of_two sends it (almost) nothing. */
async function powerOfTwo(stack: Stack): Promise<void> {
  const api = stack.state.processes.find((p) => p.name === "mocker-0")!.worker_api_urls![0]!;
  const busy = await Promise.all(
    Array.from({ length: 4 }, (_, i) =>
      fetch(`${api}/v1/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model: MODEL, prompt: `busy ${i}`, max_tokens: 8_000, stream: true }) }),
    ),
  );
  try {
    expect(busy.map((b) => b.status)).toEqual([200, 200, 200, 200]);
    const busyId = busy[0]!.headers.get("x-kvcr-worker")!;
    // The routers poll /get_load every check interval (1 s in the stack files).
    await Bun.sleep(2_500);
    const served: Served[] = [];
    for (let i = 0; i < 40; i++) served.push(await chat(stack, `short question ${i}`));
    expect(counts(served).get(busyId) ?? 0, JSON.stringify([...counts(served)])).toBeLessThanOrEqual(3);
    expect(counts(served).size).toBeGreaterThanOrEqual(2);
  } finally {
    for (const b of busy) await b.body?.cancel();
  }
}

describe.if(peersAvailable())("sglang-router and vllm-router in front of kvcr-mock workers (peers environment)", () => {
  test("sglang-router: cache_aware (the shipped file), power_of_two, round_robin, and round_robin --dp-aware over two ranks a worker", async () => {
    await using tmp = await makeTempDir("kvcr-routers-");
    await using cleanups = new AsyncDisposableStack();
    {
      const stack = await startStack(tmp.path, ["--config", join(EXAMPLES, "sglang-router.yaml")], cleanups);
      const models = (await (await fetch(`${stack.state.frontend_url}/v1/models`)).json()) as { data: { id: string }[] };
      expect(models.data.map((m) => m.id)).toEqual([MODEL]); // from the workers' /server_info
      await cacheAware(stack);
      await stop(stack);
    }
    {
      const stack = await startStack(tmp.path, ["--config", join(EXAMPLES, "sglang-router.yaml"), "--frontend-cmd", withPolicy("sglang-router.yaml", "power_of_two")], cleanups);
      await powerOfTwo(stack);
      await stop(stack);
    }
    {
      const stack = await startStack(tmp.path, ["--config", join(EXAMPLES, "sglang-router.yaml"), "--frontend-cmd", withPolicy("sglang-router.yaml", "round_robin")], cleanups);
      const served: Served[] = [];
      for (let i = 0; i < 40; i++) served.push(await chat(stack, `turn ${i}`));
      expect([...counts(served).values()]).toEqual([10, 10, 10, 10]);
      await stop(stack);
    }
    {
      // --dp-aware: the router reads dp_size from /server_info and names the rank in the body (data_parallel_rank).
      const stack = await startStack(tmp.path, ["--config", join(EXAMPLES, "sglang-router.yaml"), "--data-parallel-size", "2", "--frontend-cmd", `${withPolicy("sglang-router.yaml", "round_robin")} --dp-aware`], cleanups);
      const served: Served[] = [];
      for (let i = 0; i < 16; i++) served.push(await chat(stack, `rank turn ${i}`));
      const byRank = served.reduce((m, s) => m.set(`${s.worker}@${s.rank}`, (m.get(`${s.worker}@${s.rank}`) ?? 0) + 1), new Map<string, number>());
      expect([...byRank.values()]).toEqual([2, 2, 2, 2, 2, 2, 2, 2]); // 4 workers × 2 ranks, in turn
      await stop(stack);
    }
  }, 180_000);

  test("vllm-router: consistent_hash (the shipped file; /flush_cache fanned out), cache_aware, power_of_two", async () => {
    await using tmp = await makeTempDir("kvcr-routers-");
    await using cleanups = new AsyncDisposableStack();
    {
      const stack = await startStack(tmp.path, ["--config", join(EXAMPLES, "vllm-router.yaml")], cleanups);
      const served: Served[] = [];
      for (let i = 0; i < 20; i++) served.push(await chat(stack, `session question ${i}`, { "x-session-id": `session-${i % 5}` }));
      const bySession = new Map<string, Set<string>>();
      served.forEach((s, i) => bySession.set(`session-${i % 5}`, (bySession.get(`session-${i % 5}`) ?? new Set()).add(s.worker)));
      expect([...bySession.values()].map((w) => w.size)).toEqual([1, 1, 1, 1, 1]);
      const repeated: Served[] = [];
      for (let i = 0; i < 20; i++) repeated.push(await chat(stack, longPrompt("same"), { "x-session-id": "one-conversation" }));
      expect(counts(repeated).size).toBe(1);
      expect(repeated.slice(1).every((s) => s.cached >= s.prompt - 64)).toBe(true);
      // The router fans /flush_cache out to every worker: the repeat then finds nothing cached.
      const flushed = await fetch(`${stack.state.frontend_url}/flush_cache`, { method: "POST" });
      expect(flushed.status).toBe(200);
      expect((await chat(stack, longPrompt("same"), { "x-session-id": "one-conversation" })).cached).toBe(0);
      await stop(stack);
    }
    {
      const stack = await startStack(tmp.path, ["--config", join(EXAMPLES, "vllm-router.yaml"), "--frontend-cmd", withPolicy("vllm-router.yaml", "cache_aware")], cleanups);
      await cacheAware(stack);
      await stop(stack);
    }
    {
      const stack = await startStack(tmp.path, ["--config", join(EXAMPLES, "vllm-router.yaml"), "--frontend-cmd", withPolicy("vllm-router.yaml", "power_of_two")], cleanups);
      await powerOfTwo(stack);
      await stop(stack);
    }
  }, 180_000);

  test("vllm-router kv_aware (examples/vllm-router-kv.yaml) indexes the workers' raw KV events: repeats go to their holder, found in its index", async () => {
    await using tmp = await makeTempDir("kvcr-routers-");
    await using cleanups = new AsyncDisposableStack();
    const stack = await startStack(tmp.path, ["--config", join(EXAMPLES, "vllm-router-kv.yaml")], cleanups);
    await cacheAware(stack);
    // The router's own counters: its KV index answered the lookups from our events.
    const metricsPort = (stack.state.processes.find((p) => p.name === "frontend") as { ports?: { metrics?: number } }).ports!.metrics!;
    const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    const hits = Number(/^vllm_router_kv_placement_lookups_total\{result="hit"\} (\d+)/m.exec(text)?.[1] ?? 0);
    expect(hits).toBeGreaterThanOrEqual(30);
    await stop(stack);
  }, 120_000);

  test("a restarted mocker serves on its API ports again and the router keeps serving; a router that exits at start fails up with its output", async () => {
    await using tmp = await makeTempDir("kvcr-routers-");
    await using cleanups = new AsyncDisposableStack();
    const stack = await startStack(tmp.path, ["--config", join(EXAMPLES, "sglang-router.yaml"), "--frontend-cmd", withPolicy("sglang-router.yaml", "round_robin"), "--mocker-processes", "2", "--restart-backoff", "0.05"], cleanups);
    const before = stack.state.processes.find((p) => p.name === "mocker-0")!;
    process.kill(before.pid, "SIGKILL");
    await waitFor(() => stack.output().includes("mocker-0 restarted"), { what: "mocker-0 to be restarted and ready", timeoutMs: 30_000 });
    for (const url of before.worker_api_urls!) expect((await fetch(`${url}/health`)).status).toBe(200);
    const served: Served[] = [];
    for (let i = 0; i < 20; i++) served.push(await chat(stack, `after the restart ${i}`));
    expect([...counts(served).values()]).toEqual([5, 5, 5, 5]);
    await stop(stack);

    const broken = withPolicy("sglang-router.yaml", "no_such_policy");
    const failed = cleanups.use(spawnChild([process.execPath, CLI_ENTRY, "up", "--config", join(EXAMPLES, "sglang-router.yaml"), "--http-port", "0", "--frontend-cmd", broken], { env: { TMPDIR: tmp.path, KVCR_PEERS_PYTHON: PEERS_PYTHON! } }));
    let out = "";
    pipeOutput(failed, (t) => (out += t));
    expect(await withTimeout(failed.proc.exited, 60_000, "up to fail")).not.toBe(0);
    expect(out).toContain("kvcr-mock: frontend exited with code 2 during start-up; its last output:");
    expect(out).toContain("no_such_policy");
  }, 150_000);
});
