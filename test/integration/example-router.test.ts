// examples/prefix-router.ts, a router of its own in front of an `up --worker-api` stack (mockers
// only, direct mode: 2 workers × 2 ranks), talking to nothing but the workers' OpenAI ports and raw
// KV streams: on a shared-prefix workload its prefix reuse, read from the workers' own
// vllm:prefix_cache_queries / vllm:prefix_cache_hits counters, beats random routing's by ≥ 0.15.
import { afterEach, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { CLI_ENTRY, pidAlive, REPO_ROOT, spawnProcess, tempDir, type ChildProcess } from "../harness.ts";
import { series } from "./worker-api-kit.ts";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

interface State {
  processes: { pid: number; worker_api_urls?: string[] }[];
}

/** A child stopped with SIGTERM (its own clean stop), SIGKILLed with its group should that not end it. */
function started(child: ChildProcess): ChildProcess {
  cleanups.push(async () => {
    child.proc.kill("SIGTERM");
    await Promise.race([child.proc.exited, Bun.sleep(10_000)]);
    await child[Symbol.asyncDispose]();
  });
  return child;
}

/** Deterministic words: each group's prefix and each request's suffix are distinct text. */
function words(seed: number, n: number): string {
  let x = seed * 2654435761 + 1;
  const out: string[] = [];
  for (let i = 0; i < n; i++) {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0;
    out.push("bdfgklmnprstvz"[x % 14]! + "aeiou"[(x >>> 8) % 5]! + "bdfgklmnprstvz"[(x >>> 12) % 14]! + "aeiou"[(x >>> 16) % 5]!);
  }
  return out.join(" ");
}

/** Sum over every worker's own /metrics: prefix-cache queries and hits, in tokens. */
async function cacheCounters(urls: readonly string[]): Promise<{ queries: number; hits: number }> {
  let queries = 0;
  let hits = 0;
  for (const url of urls) {
    for (const [k, v] of await series(url)) {
      if (k.startsWith("vllm:prefix_cache_queries_total{")) queries += v;
      if (k.startsWith("vllm:prefix_cache_hits_total{")) hits += v;
    }
  }
  return { queries, hits };
}

/** Reuse (hits / queries) of one workload through the router, on freshly reset caches. */
async function reuseThrough(policy: string, phase: number, stateFile: string, urls: readonly string[]): Promise<number> {
  for (const url of urls) expect((await fetch(`${url}/reset_prefix_cache`, { method: "POST" })).status).toBe(200);
  const router = started(spawnProcess([process.execPath, join(REPO_ROOT, "examples/prefix-router.ts"), "--state-file", stateFile, "--port", "0", "--policy", policy], { cwd: REPO_ROOT }));
  const line = await router.readLine((l) => l.startsWith("prefix-router listening on"), 30_000);
  const base = /on (http:\/\/\S+)/.exec(line)![1]!;
  const before = await cacheCounters(urls);
  const groups = 6;
  const perGroup = 6;
  for (let r = 0; r < perGroup; r++) {
    for (let g = 0; g < groups; g++) {
      const prompt = `${words(phase * 100 + g, 128)} ${words(phase * 10_000 + g * 100 + r, 16)}`;
      const res = await fetch(`${base}/v1/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model: "mock-model", prompt, max_tokens: 2 }) });
      expect(res.status).toBe(200);
      await res.text();
    }
  }
  const after = await cacheCounters(urls);
  router.proc.kill("SIGTERM");
  await router.proc.exited;
  return (after.hits - before.hits) / (after.queries - before.queries);
}

test("the example router's prefix reuse beats random routing's by at least 0.15, read from the workers' own counters", async () => {
  const dir = tempDir("kvcr-example-router-");
  cleanups.push(async () => dir[Symbol.dispose]());
  const stateFile = join(dir.path, "state.json");
  const up = started(
    spawnProcess([
      process.execPath, CLI_ENTRY, "up", "--roles", "mockers", "--no-kv-state-agent", "--worker-api",
      "--workers-per-process", "2", "--data-parallel-size", "2", "--block-size", "16", "--num-gpu-blocks-override", "1024", "--speedup-ratio", "20",
      "--discovery-dir", join(dir.path, "discovery"), "--state-file", stateFile, "--grace-period", "5",
    ]),
  );
  await up.readLine((l) => l.startsWith("kvcr-mock stack ready"), 30_000);
  const state = JSON.parse(readFileSync(stateFile, "utf8")) as State;
  cleanups.push(async () => {
    for (const p of state.processes) if (pidAlive(p.pid)) process.kill(-p.pid, "SIGKILL");
  });
  const urls = state.processes.flatMap((p) => p.worker_api_urls ?? []);
  expect(urls).toHaveLength(2);

  const prefix = await reuseThrough("prefix", 1, stateFile, urls);
  const random = await reuseThrough("random", 2, stateFile, urls);
  expect({ prefix, random, margin: prefix - random >= 0.15 }).toMatchObject({ margin: true });
}, 120_000);
