// Process faults of the mocker: exit ends a real `kvcr-mock mocker --admin` process with the code
// asked for; lease_stop lets its discovery records lapse for readers while it lasts, and they come
// back once it ends; slow and latency only stretch time, the answer stays the same.
import { describe, expect, test } from "bun:test";
import { openFileDiscoveryStore } from "../../src/discovery/file-store.ts";
import { keys } from "../../src/discovery/keys.ts";
import type { DiscoveryEvent } from "../../src/discovery/store.ts";
import { startMocker } from "../../src/roles/mocker/index.ts";
import { CLI_ENTRY, cleanupList, makeTempDir, spawnProcess, waitFor, withTimeout } from "../harness.ts";
import { logger, mockerConfig } from "./mocker-kit.ts";

const cleanups = cleanupList();

async function tempDir(): Promise<string> {
  const tmp = await makeTempDir("kvcr-pfault-");
  cleanups.push(() => tmp[Symbol.asyncDispose]());
  return tmp.path;
}

describe("process faults", () => {
  test("exit: the mocker process ends with the code asked for, after answering 201", async () => {
    const dir = await tempDir();
    await using child = spawnProcess([process.execPath, CLI_ENTRY, "mocker", "--admin", "--host", "127.0.0.1", "--http-port", "0", "--discovery-dir", dir, "--namespace", "pexit"]);
    const line = await child.readErrLine((l) => /serving .* on http:\/\/127\.0\.0\.1:\d+/.test(l), 20_000);
    const url = /(http:\/\/127\.0\.0\.1:\d+)/.exec(line)![1]!;
    const res = await fetch(`${url}/admin/faults`, { method: "POST", body: JSON.stringify({ kind: "exit", code: 3 }) });
    expect(res.status).toBe(201);
    expect(await withTimeout(child.proc.exited, 10_000, "the mocker's exit")).toBe(3);
    expect(child.stderrText()).toMatch(/fault f-1 exit applied at \d{4}-\d\d-\d\dT/);
  });

  test("lease_stop: the worker record lapses for readers while it lasts and is put back after", async () => {
    const dir = await tempDir();
    const store = await openFileDiscoveryStore({ dir, leaseTtlMs: 300, pollIntervalMs: 20, logger });
    cleanups.push(() => store.close());
    const reader = await openFileDiscoveryStore({ dir, pollIntervalMs: 20, logger });
    cleanups.push(() => reader.close());
    const m = await startMocker(mockerConfig(["--discovery-dir", dir, "--namespace", "plse", "--admin"]), { logger, env: {}, discovery: store });
    cleanups.push(() => m.close());
    await m.ready;
    const events: DiscoveryEvent[] = [];
    const watch = await reader.watch(keys.kindPrefix("plse", "worker"), (e) => events.push(e));
    cleanups.push(() => watch.close());
    expect(events.map((e) => e.type)).toEqual(["put"]);
    const res = await fetch(`${m.httpUrl}/admin/faults`, { method: "POST", body: JSON.stringify({ kind: "lease_stop", for: 1 }) });
    expect(res.status).toBe(201);
    await waitFor(() => events.some((e) => e.type === "delete" && e.reason === "expired"), { timeoutMs: 10_000, what: "the record lapsing" });
    await waitFor(() => events.at(-1)?.type === "put", { timeoutMs: 10_000, what: "the record put back" });
  });

  test("slow and latency stretch a request; its tokens and summary stay the same", async () => {
    const m = await startMocker(mockerConfig(["--admin", "--block-size", "4", "--speedup-ratio", "0", "--discovery-dir", await tempDir(), "--namespace", "pslow"]), { logger, env: {} });
    cleanups.push(() => m.close());
    await m.ready;
    const run = async () => (await fetch(`${m.httpUrl}/v1/generate`, { method: "POST", body: JSON.stringify({ worker: 0, token_ids: [1, 2, 3, 4, 5], max_tokens: 4 }) })).text();
    const plain = await run();
    for (const body of [{ kind: "slow", factor: 3 }, { kind: "latency", ttft_ms: 60, per_token_ms: { dist: "uniform", min: 10, max: 20 } }]) {
      expect((await fetch(`${m.httpUrl}/admin/faults`, { method: "POST", body: JSON.stringify(body) })).status).toBe(201);
    }
    expect(m.pool.ranks[0]![0]!.timeScale).toBe(3);
    const t0 = performance.now();
    const faulted = await run();
    // The latency is really there: at least the TTFT plus three gaps of at least 10 ms (a lower bound, never too tight).
    expect(performance.now() - t0).toBeGreaterThanOrEqual(60 + 3 * 10);
    const lines = (t: string) => t.trim().split("\n").map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines(faulted).map((l) => ("token_id" in l ? "token" : l.finish_reason))).toEqual(lines(plain).map((l) => ("token_id" in l ? "token" : l.finish_reason)));
    expect((await fetch(`${m.httpUrl}/admin/faults`, { method: "DELETE" })).status).toBe(200);
    expect(m.pool.ranks[0]![0]!.timeScale).toBe(1);
  });
});
