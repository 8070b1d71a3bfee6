// Two frontend replicas over a real nats-server (router replica sync): a request routed by one
// loads its (worker, rank) in the other's router until it ends; the other then routes around it;
// a replica that goes silent has its requests freed after --router-replica-timeout; NATS killed and
// restarted: degraded /health meanwhile, sync resumes after, no request fails.
import { describe, expect, test } from "bun:test";
import { startFrontend, type FrontendHandle } from "../../src/roles/frontend/start.ts";
import { cleanupList, waitFor } from "../harness.ts";
import { natsAvailable, startNatsServer, type NatsServer } from "../nats.ts";
import { frontendConfig, logger, startStack, type Stack } from "./frontend-kit.ts";

const MOCKER = ["--num-workers", "2", "--block-size", "4", "--model-name", "m", "--speedup-ratio", "1"];
const cleanups = cleanupList();

/** A stack (one mocker, 2 workers) with two synced frontends on one NATS server. */
async function syncedPair(extra: string[] = []): Promise<{ nats: NatsServer; stack: Stack; a: FrontendHandle; b: FrontendHandle }> {
  const nats = await startNatsServer();
  cleanups.push(() => nats[Symbol.asyncDispose]());
  const sync = ["--router-mode", "kv", "--router-replica-sync", "--nats-url", nats.url, ...extra];
  const stack = await startStack({ mockers: [MOCKER], frontend: sync });
  cleanups.push(() => stack[Symbol.asyncDispose]());
  const b = await startFrontend(frontendConfig(["--http-port", "0", "--discovery-dir", stack.dir, "--namespace", "fe", ...sync]), { logger });
  cleanups.push(() => b.close());
  const a = stack.frontend;
  await waitFor(() => b.state.workerCount === 2 && a.replicaSync!.health().nats === "connected" && b.replicaSync!.health().nats === "connected", { what: "replica b routing both workers, both on NATS" });
  return { nats, stack, a, b };
}

/** Starts a long streamed request on `fe`; resolves once its first chunk arrived, with its worker and a stop. */
async function longRequest(fe: FrontendHandle, prompt: number[]): Promise<{ worker: string; rank: number; stop(): Promise<void> }> {
  const ctrl = new AbortController();
  const res = await fetch(`${fe.url}/v1/completions`, { method: "POST", signal: ctrl.signal, body: JSON.stringify({ model: "m", prompt, max_tokens: 5000, stream: true, ignore_eos: true }) });
  expect(res.status).toBe(200);
  const reader = res.body!.getReader();
  await reader.read();
  return {
    worker: res.headers.get("x-kvcr-worker")!,
    rank: Number(res.headers.get("x-kvcr-dp-rank")),
    async stop() {
      ctrl.abort();
      await reader.cancel().catch(() => undefined);
    },
  };
}

const activeOn = (fe: FrontendHandle, worker: string, rank: number) => fe.state.routerOf("m")!.activeBlocksOf(fe.state.rankIdOf(worker, rank));
const prompt = (seed: number) => Array.from({ length: 64 }, (_, i) => seed * 1000 + i);

describe.skipIf(!natsAvailable())("router replica sync over nats-server", () => {
  test("a request routed by one replica loads the other's router until it ends, and the other routes around it", async () => {
    const { nats, stack, a, b } = await syncedPair();
    const req = await longRequest(a, prompt(1));
    // 64 tokens / block size 4: 16 active blocks, counted by b from a's add.
    await waitFor(() => activeOn(b, req.worker, req.rank) === 16, { what: "a's request counted in b's load" });
    expect(b.replicaSync!.ledger.requestCount).toBe(1);
    // Fresh prompts through b: the worker busy with a's request costs 16 blocks more, so every one goes to the other.
    for (let i = 0; i < 5; i++) {
      const res = await fetch(`${b.url}/v1/completions`, { method: "POST", body: JSON.stringify({ model: "m", prompt: prompt(100 + i), max_tokens: 1 }) });
      expect(res.status).toBe(200);
      expect(res.headers.get("x-kvcr-worker")).not.toBe(req.worker);
    }
    // A replica that joins now starts empty (as Dynamo's): a's heartbeats name a request it never saw added.
    const c = await startFrontend(frontendConfig(["--http-port", "0", "--discovery-dir", stack.dir, "--namespace", "fe", "--router-mode", "kv", "--router-replica-sync", "--nats-url", nats.url]), { logger });
    cleanups.push(() => c.close());
    await waitFor(() => c.replicaSync!.ledger.replicaCount === 2, { what: "c hearing a's and b's heartbeats", timeoutMs: 5000 });
    expect(c.replicaSync!.ledger.requestCount).toBe(0);
    await req.stop();
    await waitFor(() => activeOn(b, req.worker, req.rank) === 0 && b.replicaSync!.ledger.requestCount === 0, { what: "a's free applied by b" });
    // b hears c's heartbeats too (c routed nothing): two other replicas.
    await waitFor(() => b.replicaSync!.ledger.replicaCount === 2, { what: "b hearing a and c", timeoutMs: 5000 });
    const metrics = await (await fetch(`${b.url}/metrics`)).text();
    expect(metrics).toMatch(/kvcr_frontend_router_replica_sync_events_applied_total [1-9]/);
    expect(metrics).toMatch(/kvcr_frontend_router_replica_sync_replicas 2\n/);
  });

  test("NATS killed: /health degraded and the other replica's requests freed after the timeout; restarted: sync resumes", async () => {
    const { nats, a, b } = await syncedPair(["--router-replica-timeout", "0.5"]);
    const req = await longRequest(a, prompt(2));
    await waitFor(() => activeOn(b, req.worker, req.rank) === 16, { what: "a's request counted in b's load" });
    await nats.kill();
    await waitFor(async () => ((await (await fetch(`${b.url}/health`)).json()) as { status: string }).status === "degraded", { what: "b's /health degraded without NATS" });
    // b hears nothing from a any more: past the timeout a's request no longer loads b's router.
    await waitFor(() => activeOn(b, req.worker, req.rank) === 0, { what: "a's request freed by b after the timeout", timeoutMs: 5000 });
    // Routing goes on with local state.
    const res = await fetch(`${b.url}/v1/completions`, { method: "POST", body: JSON.stringify({ model: "m", prompt: prompt(3), max_tokens: 1 }) });
    expect(res.status).toBe(200);
    await nats.restart();
    await waitFor(async () => ((await (await fetch(`${b.url}/health`)).json()) as { status: string }).status === "healthy", { what: "b's /health healthy again", timeoutMs: 10_000 });
    await waitFor(() => a.replicaSync!.health().nats === "connected", { what: "a reconnected", timeoutMs: 10_000 });
    const again = await longRequest(a, prompt(4));
    await waitFor(() => activeOn(b, again.worker, again.rank) === 16, { what: "a's new request counted in b's load after the restart" });
    await again.stop();
    await req.stop();
    await waitFor(() => b.replicaSync!.ledger.requestCount === 0, { what: "every remote request freed" });
  });

  test("NATS killed and restarted under load: no request fails, and the load settles to zero", async () => {
    const { nats, a, b } = await syncedPair(["--router-replica-timeout", "0.5"]);
    const statuses = new Map<number, number>();
    let done = 0;
    let stop = false;
    // 8 clients alternating between the replicas until told to stop (bounded: 2,000 requests at most).
    const client = async (c: number) => {
      for (let i = 0; !stop && i < 250; i++) {
        const fe = (c + i) % 2 === 0 ? a : b;
        const res = await fetch(`${fe.url}/v1/completions`, { method: "POST", body: JSON.stringify({ model: "m", prompt: prompt(10 + ((c * 7 + i) % 5)), max_tokens: 2 }) });
        await res.arrayBuffer();
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
        done++;
      }
    };
    const clients = Array.from({ length: 8 }, (_, c) => client(c));
    try {
      await waitFor(() => done >= 40, { what: "load under way", timeoutMs: 10_000 });
      await nats.kill();
      const killedAt = done;
      await waitFor(() => done >= killedAt + 40 && b.replicaSync!.health().nats === "unreachable", { what: "load going on without NATS", timeoutMs: 10_000 });
      await nats.restart();
      await waitFor(() => a.replicaSync!.health().nats === "connected" && b.replicaSync!.health().nats === "connected", { what: "both replicas back on NATS", timeoutMs: 10_000 });
      const backAt = done;
      await waitFor(() => done >= backAt + 40, { what: "load going on after the restart", timeoutMs: 10_000 });
    } finally {
      stop = true;
      await Promise.all(clients);
    }
    expect([...statuses.keys()]).toEqual([200]);
    // Every request ended: nothing of either replica still loads a worker in the other.
    for (const fe of [a, b]) {
      await waitFor(() => fe.state.workerList().every((w) => w.rankIds.every((s) => fe.state.routerOf("m")!.activeBlocksOf(s) === 0)), { what: "all load released", timeoutMs: 5000 });
    }
    expect(b.replicaSync!.counts.eventsApplied).toBeGreaterThan(0);
  });
});
