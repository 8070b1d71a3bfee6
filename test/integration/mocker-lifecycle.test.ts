// Mocker lifecycle and HTTP edge: health only after registration, bad bodies and unknown
// workers, client disconnects, a registration failure withdraws what was already published,
// SIGTERM withdraws intents before exit, and bad flag combinations never start a process.
import { describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { keys } from "../../src/discovery/keys.ts";
import { openFileDiscoveryStore } from "../../src/discovery/file-store.ts";
import type { DiscoveryStore } from "../../src/discovery/store.ts";
import type { AttachmentIntent, WorkerRecord } from "../../src/protocol/records.ts";
import { startMocker } from "../../src/roles/mocker/index.ts";
import { createLogger } from "../../src/lib/logger.ts";
import { cleanupList, CLI_ENTRY, makeTempDir, runCli, spawnChild, waitFor, withTimeout } from "../harness.ts";
import { logger, mockerConfig } from "./mocker-kit.ts";

const cleanups = cleanupList();

const agentArgs = (dir: string) => [
  "--num-workers", "2", "--zmq-kv-events-ports", "0,0", "--num-host-blocks", "16", "--kv-state-agent",
  "--kv-state-agent-raw-host", "127.0.0.1", "--kv-state-agent-cache-slot", "0", "--discovery-dir", dir, "--namespace", "life",
];

/** A store whose puts wait for `release()`, and whose Nth put can be made to fail. */
function gatedStore(inner: DiscoveryStore, failAtPut?: number) {
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  let puts = 0;
  const published: string[] = [];
  const store: DiscoveryStore = {
    backend: inner.backend,
    put: async (key, value, opts) => {
      await gate;
      if (++puts === failAtPut) throw new Error(`injected discovery failure at put ${puts}`);
      const record = await inner.put(key, value, opts);
      published.push(key);
      return record;
    },
    list: (p) => inner.list(p),
    watch: (p, l) => inner.watch(p, l),
    close: () => inner.close(),
    [Symbol.asyncDispose]: () => inner.close(),
  };
  return { store, release, published };
}

describe("mocker HTTP edge", () => {
  test("health is 503 until registration, after which each bad request gets its status (400, 404, 405) and reason", async () => {
    await using dir = await makeTempDir("kvcr-life-");
    await using inner = await openFileDiscoveryStore({ dir: dir.path, logger });
    const { store, release } = gatedStore(inner);
    // A context above the huge request below, so the KV-capacity refusal is the one it meets.
    const m = await startMocker(mockerConfig(["--num-workers", "2", "--data-parallel-size", "2", "--speedup-ratio", "0", "--max-model-len", String(1 << 21), "--discovery-dir", dir.path]), { logger, env: {}, discovery: store });
    cleanups.push(() => m.close());
    expect((await fetch(`${m.httpUrl}/live`)).status).toBe(200);
    expect((await fetch(`${m.httpUrl}/health`)).status).toBe(503);
    release();
    await withTimeout(m.ready, 10_000, "registration");
    expect(await (await fetch(`${m.httpUrl}/health`)).json()).toEqual({ status: "healthy", discovery: { backend: "file", connected: true, degraded: false } });

    const post = (body: string) => fetch(`${m.httpUrl}/v1/generate`, { method: "POST", body });
    const cases: [string, number, string][] = [
      ["{not json", 400, "body is not valid JSON"],
      ['{"worker":0,"token_ids":[],"max_tokens":1}', 400, "token_ids: expected a non-empty array"],
      ['{"worker":0,"token_ids":[1],"max_tokens":1,"extra":true}', 400, 'unknown field "extra"'],
      ['{"worker":2,"token_ids":[1],"max_tokens":1}', 404, "unknown worker 2"],
      ['{"worker":1,"dp_rank":2,"token_ids":[1],"max_tokens":1}', 404, "unknown dp_rank 2"],
      [JSON.stringify({ worker: 0, token_ids: new Array(20000).fill(1), max_tokens: 1 << 20 }), 400, "more than the 16384 this rank has"],
    ];
    for (const [body, status, message] of cases) {
      const res = await post(body);
      expect(res.status).toBe(status);
      expect(((await res.json()) as { error: { message: string } }).error.message).toContain(message);
    }
    expect((await fetch(`${m.httpUrl}/v1/generate`)).status).toBe(405);
    expect((await fetch(`${m.httpUrl}/nope`)).status).toBe(404);
    const metrics = await (await fetch(`${m.httpUrl}/metrics`)).text();
    expect(metrics).toContain(`vllm:num_requests_waiting{engine="1",model_name="mocker-engine",worker="${m.workers[1]!.workerId}"} 0`);
    expect(metrics).toContain('kvcr_discovery_connected{backend="file"} 1\n');
  });

  test("a client that disconnects cancels its request (sent with a router hint, accepted and ignored)", async () => {
    await using dir = await makeTempDir("kvcr-life-");
    // Real time (speedup 1): a 5,000-token output takes seconds, so the abort lands mid-stream.
    const m = await startMocker(mockerConfig(["--discovery-dir", dir.path]), { logger, env: {} });
    cleanups.push(() => m.close());
    await withTimeout(m.ready, 10_000, "registration");
    const abort = new AbortController();
    const res = await fetch(`${m.httpUrl}/v1/generate`, {
      method: "POST",
      body: JSON.stringify({ worker: 0, token_ids: [1, 2, 3], max_tokens: 5000, request_id: "gone", kv_hint: { protocol_version: "0.1", actions: [] } }),
      signal: abort.signal,
    });
    const reader = res.body!.getReader();
    const first = await reader.read();
    expect(new TextDecoder().decode(first.value)).toStartWith('{"token_id":');
    expect(m.pool.inFlight).toBe(1);
    // The same request_id while it is in flight is a conflict; a client-chosen "req-0" does not
    // block requests without an id (their generated ids skip it).
    const post = (body: object) => fetch(`${m.httpUrl}/v1/generate`, { method: "POST", body: JSON.stringify(body) });
    const dup = await post({ worker: 0, token_ids: [1], max_tokens: 1, request_id: "gone" });
    expect(dup.status).toBe(409);
    expect(((await dup.json()) as { error: { message: string } }).error.message).toBe("request_id gone is already in flight");
    const held = new AbortController();
    const res0 = await fetch(`${m.httpUrl}/v1/generate`, { method: "POST", body: JSON.stringify({ worker: 0, token_ids: [4], max_tokens: 5000, request_id: "req-0" }), signal: held.signal });
    await res0.body!.getReader().read();
    const anonymous = await post({ worker: 0, token_ids: [5, 6], max_tokens: 1 });
    expect(anonymous.status).toBe(200);
    expect(await anonymous.text()).toContain('"finish_reason":"length"');
    held.abort();
    abort.abort();
    await waitFor(() => m.pool.inFlight === 0 && m.pool.ranks[0]![0]!.engine.pendingRequests === 0, { timeoutMs: 5000, what: "the request to be cancelled" });
  });
});

describe("mocker live loop with host offload", () => {
  test("a new request is served while an earlier request's device-to-host copies are still in flight", async () => {
    await using dir = await makeTempDir("kvcr-life-");
    // 10 blocks × 8 MiB at 0.1 GB/s: the copies take ~0.8 s of real time (speedup 1).
    const m = await startMocker(mockerConfig(["--num-host-blocks", "1000", "--host-offload-d2h-bandwidth-gbps", "0.1", "--discovery-dir", dir.path]), { logger, env: {} });
    cleanups.push(() => m.close());
    await withTimeout(m.ready, 10_000, "registration");
    const post = (body: object) => fetch(`${m.httpUrl}/v1/generate`, { method: "POST", body: JSON.stringify(body) }).then((r) => r.text());
    const engine = m.pool.ranks[0]![0]!.engine;
    await post({ worker: 0, token_ids: Array.from({ length: 640 }, (_, i) => i + 1), max_tokens: 1 });
    expect(engine.nextWakeMs()).toBeDefined(); // copies of the first request are in flight
    const second = await post({ worker: 0, token_ids: [7, 8, 9], max_tokens: 1 });
    expect(second).toContain('"finish_reason":"length"');
    // Served without waiting for the copies to land.
    expect(engine.nextWakeMs()).toBeDefined();
  });
});

describe("mocker start-up failures withdraw what was published", () => {
  test("a discovery failure after the first intents withdraws them before ready rejects", async () => {
    await using dir = await makeTempDir("kvcr-life-");
    await using inner = await openFileDiscoveryStore({ dir: dir.path, logger });
    // Puts: the third fails. Workers register concurrently without a stagger delay (see
    // registration.ts), so which record it is varies; at least one intent is in by then.
    const { store, release, published } = gatedStore(inner, 3);
    const m = await startMocker(mockerConfig(agentArgs(dir.path)), { logger, env: {}, discovery: store });
    cleanups.push(() => m.close());
    release();
    await expect(withTimeout(m.ready, 10_000, "registration")).rejects.toThrow("injected discovery failure at put 3");
    expect(published.length).toBeGreaterThanOrEqual(2);
    expect(published.some((k) => k.includes("/intents/"))).toBe(true);
    // Already gone when the error surfaced.
    expect(await inner.list(keys.namespacePrefix("life"))).toEqual([]);
    // The HTTP server is gone too: nothing half-started is left serving.
    await expect(fetch(`${m.httpUrl}/live`)).rejects.toThrow();
  });
});

describe("kvcr-mock mocker process", () => {
  test("SIGTERM withdraws intents and records, then exits 0", async () => {
    await using dir = await makeTempDir("kvcr-life-");
    const child = spawnChild([process.execPath, CLI_ENTRY, "mocker", ...agentArgs(dir.path), "--log-level", "info"]);
    cleanups.push(() => child[Symbol.asyncDispose]());
    const { proc } = child;
    await using store = await openFileDiscoveryStore({ dir: dir.path, logger });
    await waitFor(async () => (await store.list(keys.kindPrefix("life", "intent"))).length === 2, { timeoutMs: 15_000, what: "both intents in discovery" });
    proc.kill("SIGTERM");
    expect(await withTimeout(proc.exited, 10_000, "mocker exit")).toBe(0);
    expect(await store.list(keys.namespacePrefix("life"))).toEqual([]);
    expect(await new Response(proc.stderr).text()).toContain("SIGTERM: shutting down");
  }, 30_000);

  test("a signal, even repeated, with a long request in flight ends its stream 'cancelled', withdraws the records and exits 0", async () => {
    await using dir = await makeTempDir("kvcr-life-");
    const child = spawnChild([process.execPath, CLI_ENTRY, "mocker", ...agentArgs(dir.path)]);
    cleanups.push(() => child[Symbol.asyncDispose]());
    const { proc } = child;
    await using store = await openFileDiscoveryStore({ dir: dir.path, logger });
    const workers = await waitFor(async () => {
      const found = await store.list(keys.kindPrefix("life", "worker"));
      return found.length === 2 ? found.map((e) => e.value as WorkerRecord) : undefined;
    }, { timeoutMs: 15_000, what: "both worker records" });
    // Real time (speedup 1): 100,000 output tokens would take minutes.
    const res = await fetch(workers[0]!.request_url, { method: "POST", body: JSON.stringify({ worker: 0, token_ids: [1, 2, 3], max_tokens: 100_000 }) });
    const reader = res.body!.getReader();
    expect((await reader.read()).done).toBe(false);
    proc.kill("SIGINT");
    proc.kill("SIGINT"); // e.g. Ctrl-C twice, or `timeout` signalling the whole process group
    let text = "";
    for (;;) {
      const { done, value } = await withTimeout(reader.read(), 10_000, "the stream to end");
      if (done) break;
      text += new TextDecoder().decode(value);
    }
    expect(JSON.parse(text.trimEnd().split("\n").at(-1)!)).toMatchObject({ finish_reason: "cancelled", prompt_tokens: 3 });
    expect(await withTimeout(proc.exited, 10_000, "mocker exit")).toBe(0);
    expect(await store.list(keys.namespacePrefix("life"))).toEqual([]);
  }, 30_000);

  test.each([
    [["--kv-state-agent"], "--zmq-kv-events-ports: required with --kv-state-agent"],
    [["--kv-state-agent", "--zmq-kv-events-ports", "5557", "--num-host-blocks", "8", "--kv-state-agent-cache-slot", "0", "--kv-state-agent-raw-host", "localhost"], "--kv-state-agent-raw-host: got \"localhost\""],
    [["--kv-state-agent", "--zmq-kv-events-ports", "5557", "--num-host-blocks", "8", "--kv-state-agent-cache-slot", "0", "--kv-state-agent-raw-host", "tcp://10.0.0.1:5"], "without a scheme"],
    [["--num-workers", "2", "--zmq-kv-events-ports", "5557"], "expected exactly one per worker (2)"],
    [["--kv-state-agent-router-hints"], "needs --kv-state-agent"],
    [["--num-host-blocks", "4", "--no-enable-prefix-caching"], "requires prefix caching"],
    [["--block-size", "0"], "--block-size: got 0, expected an integer from 1 to 65536"],
  ])("rejects %p with exit 2", async (args, message) => {
    const r = await runCli(["mocker", ...args]);
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toContain(message);
  });

  test("a bad DYN_NAMESPACE is rejected before anything starts", async () => {
    const r = await runCli(["mocker"], { env: { DYN_NAMESPACE: "a/b" } });
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toContain('--namespace (or KVCR_NAMESPACE, DYN_NAMESPACE): got "a/b"');
    expect(r.stderr).not.toContain("serving");
  });

  test("an --extra-engine-args file with kv_state_agent but no events port is rejected", async () => {
    await using dir = await makeTempDir("kvcr-life-");
    const file = join(dir.path, "args.json");
    writeFileSync(file, JSON.stringify({ engine: { num_host_blocks: 8 }, dynamo: { kv_state_agent: true, kv_state_agent_raw_host: "10.0.0.2", kv_state_agent_cache_slot: 0 } }));
    const r = await runCli(["mocker", "--extra-engine-args", file]);
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toContain("--zmq-kv-events-ports: required with --kv-state-agent");
  });
});

describe("mocker discovery records", () => {
  test("router hints advertise a held placeholder endpoint per CacheOwner, in transfer domains split by island", async () => {
    await using dir = await makeTempDir("kvcr-life-");
    const args = [...agentArgs(dir.path).slice(4), "--num-workers", "3", "--zmq-kv-events-ports", "0,0,0", "--kv-state-agent-router-hints", "--kv-transfer-island-size", "2"];
    const env = { DYN_TOPOLOGY_RACK: "r7", DYN_KV_TRANSFER_DOMAIN: "nvl72" };
    const m = await startMocker(mockerConfig(args), { logger, env });
    cleanups.push(() => m.close());
    await withTimeout(m.ready, 10_000, "registration");
    await using store = await openFileDiscoveryStore({ dir: dir.path, logger });
    const records = (await store.list(keys.kindPrefix("life", "worker"))).map((e) => e.value as WorkerRecord).sort((a, b) => a.worker_index - b.worker_index);
    expect(records.map((r) => r.kv_transfer_domain)).toEqual(["nvl72-0", "nvl72-0", "nvl72-1"]);
    expect(records.every((r) => r.capabilities.includes("router_hint") && r.topology.rack === "r7")).toBe(true);
    const intents = (await store.list(keys.kindPrefix("life", "intent"))).map((e) => e.value as AttachmentIntent);
    for (const r of records) {
      expect(r.router_hint_sources).toHaveLength(1);
      const source = r.router_hint_sources![0]!;
      expect(source.cache_owner_id).toBe(r.cache_owner_ids![0]!);
      expect(intents.find((i) => i.cache_owner_id === source.cache_owner_id)!.router_hint_source).toBe(source.source_control_endpoint);
      // The placeholder port is held open for its owner.
      const port = Number(source.source_control_endpoint.split(":").at(-1));
      const sock = await Bun.connect({ hostname: "127.0.0.1", port, socket: { data() {} } });
      sock.end();
    }
  });
});

describe("mocker logs", () => {
  test("start-up logs a summary at info whatever the worker count, each worker's endpoints only at debug", async () => {
    await using dir = await makeTempDir("kvcr-log-");
    const lines: { level: string; msg: string }[] = [];
    const stream = { write: (t: string) => (lines.push(JSON.parse(t) as { level: string; msg: string }), true) } as unknown as NodeJS.WritableStream;
    const captured = createLogger({ level: "debug", format: "json", stream });
    const m = await startMocker(mockerConfig(["--num-workers", "20", "--zmq-kv-events-ports", Array(20).fill(0).join(","), "--discovery-dir", dir.path]), { logger: captured, env: {} });
    try {
      await withTimeout(m.ready, 10_000, "registration");
    } finally {
      await m.close();
    }
    const info = lines.filter((l) => l.level === "info").map((l) => l.msg);
    expect(info.length).toBeLessThanOrEqual(4);
    expect(info.some((l) => /^events: raw PUB 20 ports \d+–\d+ on 127\.0\.0\.1/.test(l))).toBe(true);
    const perWorker = lines.filter((l) => /^worker \d+ \(/.test(l.msg));
    expect(perWorker.length).toBe(20);
    expect(perWorker.every((l) => l.level === "debug")).toBe(true);
  });
});
