// Router replica sync inside the compiled binary (the NATS client package bundled by
// `bun build --compile`): two frontend processes on a real nats-server; a request routed by one is
// counted by the other; the first is SIGKILLed, and the other frees its request after the timeout.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { makeTempDir, spawnChild, waitFor, type SpawnedChild, type TempDir } from "../harness.ts";
import { LineQueue } from "../lines.ts";
import { natsAvailable, startNatsServer, type NatsServer } from "../nats.ts";
import { compiledBinary } from "./compiled.ts";

type SyncHealth = { status: string; instances: number; replica_sync: { nats: string; replicas: number; remote_requests: number } };

describe.skipIf(!natsAvailable())("compiled binary: router replica sync", () => {
  let bin: string;
  let nats: NatsServer;
  let dir: TempDir;
  beforeAll(async () => {
    bin = await compiledBinary();
    nats = await startNatsServer();
    dir = await makeTempDir("kvcr-sync-bin-");
  }, 120_000);
  afterAll(async () => {
    await nats?.[Symbol.asyncDispose]();
    await dir?.[Symbol.asyncDispose]();
  });

  /** A frontend process and its URL (from its listening line). */
  async function frontend(children: SpawnedChild<"ignore", "ignore", "pipe">[]): Promise<string> {
    const child = spawnChild(
      [bin, "frontend", "--http-port", "0", "--namespace", "sync", "--discovery-dir", dir.path, "--router-mode", "kv", "--router-replica-sync", "--nats-url", nats.url, "--router-replica-timeout", "1"],
      { stdout: "ignore" },
    );
    children.push(child);
    const line = await new LineQueue(child.proc.stderr).next((l) => l.includes("OpenAI-compatible API on"), 15_000, () => "a frontend's listening line");
    return /(http:\/\/127\.0\.0\.1:\d+)/.exec(line)![1]!;
  }

  test("two frontend processes sync; one SIGKILLed, the other frees its request and serves on", async () => {
    const children: SpawnedChild<"ignore", "ignore", "pipe">[] = [];
    try {
      const mocker = spawnChild([bin, "mocker", "--num-workers", "2", "--block-size", "4", "--model-name", "m", "--namespace", "sync", "--discovery-dir", dir.path, "--speedup-ratio", "1"], { stdout: "ignore" });
      children.push(mocker);
      const [a, b] = [await frontend(children), await frontend(children)];
      const health = async (url: string) => (await (await fetch(`${url}/health`)).json()) as SyncHealth;
      for (const url of [a, b]) await waitFor(async () => (await health(url)).instances === 2 && (await health(url)).replica_sync.nats === "connected", { what: `${url} routing 2 workers on NATS`, timeoutMs: 15_000 });

      const ctrl = new AbortController();
      const res = await fetch(`${a}/v1/completions`, { method: "POST", signal: ctrl.signal, body: JSON.stringify({ model: "m", prompt: Array.from({ length: 64 }, (_, i) => i + 1), max_tokens: 5000, stream: true, ignore_eos: true }) });
      expect(res.status).toBe(200);
      const reader = res.body!.getReader();
      await reader.read();
      await waitFor(async () => (await health(b)).replica_sync.remote_requests === 1, { what: "a's request counted by b", timeoutMs: 10_000 });
      expect((await health(b)).replica_sync.replicas).toBe(1);

      // a dies without a word: b frees its request once a has been silent for the timeout (1 s).
      children[1]!.killGroup();
      await children[1]!.proc.exited;
      ctrl.abort();
      await waitFor(async () => (await health(b)).replica_sync.remote_requests === 0 && (await health(b)).replica_sync.replicas === 0, { what: "b freeing a's request", timeoutMs: 10_000 });
      const metrics = await (await fetch(`${b}/metrics`)).text();
      expect(metrics).toMatch(/kvcr_frontend_router_replica_sync_expired_requests_total 1\n/);
      const after = await fetch(`${b}/v1/completions`, { method: "POST", body: JSON.stringify({ model: "m", prompt: [1, 2, 3], max_tokens: 2 }) });
      expect(after.status).toBe(200);
    } finally {
      for (const c of children.reverse()) await c[Symbol.asyncDispose]();
    }
  }, 60_000);
});
