// kvcr-mock workers under Dynamo's own frontend (peers environment): `mocker --runtime dynamo`
// registers in Dynamo's file store, Dynamo's frontend discovers the workers, serves chat through
// them over the TCP request plane and KV-routes on their ZeroMQ events: with --router-mode kv a
// prefix sent again lands on the worker holding it; with round-robin it does not (the control).
import { describe, expect, test } from "bun:test";
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import OpenAI from "openai";
import { pickFreePorts } from "../../src/transport/port-hold.ts";
import { CLI_ENTRY, makeTempDir, pipeOutput, spawnChild, waitFor, withTimeout, type SpawnedChild } from "../harness.ts";
import { etcdAvailable, startEtcd, type EtcdServer } from "../etcd.ts";
import { PEERS_PYTHON, peerEnv, peersAvailable } from "../peers.ts";

const WORKERS = 4;
const PREFIXES = 8;
const REPEATS = 4;

/** Eight distinct ~600-byte prompts (one token per byte under the byte-level tokenizer). */
function prefix(i: number): string {
  const words = Array.from({ length: 100 }, (_, j) => `w${i}x${(j * 7919 + i * 104729) % 100003}`);
  return `Prefix ${i}: ${words.join(" ")}`;
}

interface Stack extends AsyncDisposable {
  client: OpenAI;
  mockerLog(): string;
  frontendLog(): string;
  mocker: SpawnedChild;
  discovery: string;
}

async function startStack(root: string, routerMode: string, extraMockerFlags: string[] = [], etcd?: EtcdServer, mockerEnv: Record<string, string> = {}, models = ["mock-model"]): Promise<Stack> {
  const model = join(root, "model");
  const discovery = join(root, `kv-${routerMode}`);
  const backend: Record<string, string> = etcd ? { DYN_DISCOVERY_BACKEND: "etcd", ETCD_ENDPOINTS: etcd.endpoint } : { DYN_DISCOVERY_BACKEND: "file", DYN_FILE_KV: discovery };
  const env = peerEnv({ ...backend, DYN_TCP_RESPONSE_STREAM_HOST: "127.0.0.1", DYN_EVENT_PLANE_HOST: "127.0.0.1", DYN_TCP_RPC_HOST: "127.0.0.1", TMPDIR: root });
  if (!existsSync(model)) {
    await using mf = spawnChild([process.execPath, CLI_ENTRY, "model-files", "--out", model, "--log-level", "warn"]);
    expect(await mf.proc.exited).toBe(0);
  }
  let mockerOut = "";
  const mocker = spawnChild([process.execPath, CLI_ENTRY, "mocker", "--runtime", "dynamo", "--model-path", model, "--model-name", "mock-model",
    "--num-workers", String(WORKERS), "--block-size", "16", "--speedup-ratio", "0", "--log-level", "debug", ...extraMockerFlags], { env: { ...env, ...mockerEnv } });
  pipeOutput(mocker, (t) => (mockerOut += t));
  if (etcd) await waitFor(() => mockerOut.includes(`serving ${WORKERS} Dynamo worker(s)`), { what: `the mocker to register in etcd (its log:\n${mockerOut})`, timeoutMs: 20_000 });
  else await waitFor(() => existsSync(join(discovery, "v1/mdc")) && readdirSync(join(discovery, "v1/mdc")).length === WORKERS * models.length, { what: `${WORKERS * models.length} model cards (mocker log:\n${mockerOut})`, timeoutMs: 20_000 });
  const [port] = pickFreePorts("127.0.0.1", 1);
  let frontendOut = "";
  const frontend = spawnChild([PEERS_PYTHON!, "-m", "dynamo.frontend", "--http-host", "127.0.0.1", "--http-port", String(port), "--router-mode", routerMode,
    "--discovery-backend", etcd ? "etcd" : "file", "--request-plane", "tcp", "--event-plane", "zmq"], { env });
  pipeOutput(frontend, (t) => (frontendOut += t));
  const base = `http://127.0.0.1:${port}`;
  const models_ = models;
  await waitFor(async () => {
    try {
      const listed = (await (await fetch(`${base}/v1/models`)).json()) as { data: { id: string }[] };
      const health = (await (await fetch(`${base}/health`)).json()) as { instances?: unknown[] };
      return models_.every((id) => listed.data.some((m) => m.id === id)) && (health.instances?.length ?? 0) >= WORKERS;
    } catch {
      return false;
    }
  }, { what: `Dynamo's frontend to list mock-model over ${WORKERS} workers (its log:\n${frontendOut})`, timeoutMs: 60_000 });
  return {
    client: new OpenAI({ baseURL: `${base}/v1`, apiKey: "none", maxRetries: 0 }),
    mockerLog: () => mockerOut,
    frontendLog: () => frontendOut,
    mocker,
    discovery,
    async [Symbol.asyncDispose]() {
      await frontend[Symbol.asyncDispose]();
      await mocker[Symbol.asyncDispose]();
    },
  };
}

/** Sends each prefix REPEATS times in sequence; the share of prompt tokens the workers found cached. */
async function hitShare(client: OpenAI, model = "mock-model"): Promise<{ share: number; firstHits: number[] }> {
  let cached = 0;
  let prompt = 0;
  const firstHits: number[] = [];
  for (let p = 0; p < PREFIXES; p++) {
    for (let r = 0; r < REPEATS; r++) {
      const answer = await client.chat.completions.create({ model, messages: [{ role: "user", content: prefix(p) }], max_tokens: 4 });
      expect(answer.model).toBe(model);
      expect(answer.choices[0]!.finish_reason).toBe("length");
      expect(answer.usage!.completion_tokens).toBe(4);
      const hit = answer.usage!.prompt_tokens_details?.cached_tokens ?? 0;
      if (r === 0) firstHits.push(hit);
      cached += hit;
      prompt += answer.usage!.prompt_tokens;
    }
  }
  return { share: cached / prompt, firstHits };
}

describe.if(peersAvailable())("Dynamo's frontend over kvcr-mock workers (peers environment)", () => {
  test("--router-mode kv sends a repeated prefix to its holder (≥ 60 % of prompt tokens cached); round-robin does not (< 10 %)", async () => {
    await using tmp = await makeTempDir("kvcr-dyn-");
    {
      await using kv = await startStack(tmp.path, "kv");
      const { share, firstHits } = await hitShare(kv.client);
      // Every prefix is new to the workers the first time (only the chat template's first block,
      // "<|im_start|>user", is shared): distinct token ids per prefix reached them.
      for (const hit of firstHits) expect(hit).toBeLessThanOrEqual(16);
      expect(share, kv.frontendLog().slice(-3000)).toBeGreaterThanOrEqual(0.6);
      // The frontend's request id (the uuid of its chat id) names the request in the mocker's log.
      const answer = await kv.client.chat.completions.create({ model: "mock-model", messages: [{ role: "user", content: "trace me" }], max_tokens: 2 });
      const requestId = answer.id.replace(/^chatcmpl-/, "");
      await waitFor(() => kv.mockerLog().includes(`request ${requestId} → worker`), { what: `request ${requestId} in the mocker's log`, timeoutMs: 5_000 });
    }
    {
      await using rr = await startStack(tmp.path, "round-robin");
      const { share } = await hitShare(rr.client);
      expect(share).toBeLessThan(0.1);
    }
  }, 180_000);

  test("a cancelled stream stops its engine request, and kill -9 of the mocker drops its workers from the frontend", async () => {
    await using tmp = await makeTempDir("kvcr-dyn-");
    const [systemPort] = pickFreePorts("127.0.0.1", 1);
    await using stack = await startStack(tmp.path, "kv", ["--speedup-ratio", "1", "--decode-ms", "50"], undefined, { DYN_SYSTEM_PORT: String(systemPort) });
    const system = `http://127.0.0.1:${systemPort}`;
    expect(((await (await fetch(`${system}/live`)).json()) as { status: string }).status).toBe("ready");
    const abort = new AbortController();
    const stream = await stack.client.chat.completions.create({ model: "mock-model", messages: [{ role: "user", content: "a long answer" }], max_tokens: 2000, stream: true }, { signal: abort.signal });
    let chunks = 0;
    try {
      for await (const _ of stream) {
        if (++chunks < 3) continue;
        abort.abort();
        break; // a chunk the client already read would still come out of the loop
      }
    } catch {
      // the abort ends the iteration
    }
    expect(chunks).toBe(3);
    await waitFor(() => /cancelled by the frontend \((stop|kill)\)/.test(stack.mockerLog()), { what: `the mocker to cancel the engine request (its log:\n${stack.mockerLog().slice(-2000)})`, timeoutMs: 10_000 });
    // DYN_SYSTEM_PORT's /metrics counts it, and the engines run nothing any more.
    const metrics = (await (await fetch(`${system}/metrics`)).text()).split("\n");
    expect(metrics.filter((l) => l.startsWith("kvcr_mocker_dynamo_requests_cancelled_total "))).toEqual(["kvcr_mocker_dynamo_requests_cancelled_total 1"]);
    expect(metrics.filter((l) => l.startsWith("vllm:num_requests_running{") && !l.endsWith(" 0"))).toEqual([]);
    stack.mocker.killGroup();
    await withTimeout(stack.mocker.proc.exited, 10_000, "the mocker");
    // Dynamo's file store drops records older than its 10 s TTL: the frontend then lists no instance.
    await waitFor(async () => {
      const health = (await (await fetch(stack.client.baseURL.replace(/\/v1$/, "/health"))).json()) as { instances?: unknown[] };
      return (health.instances?.length ?? 0) === 0;
    }, { what: "the frontend to drop the killed mocker's workers", timeoutMs: 25_000 });
    const failed = await stack.client.chat.completions.create({ model: "mock-model", messages: [{ role: "user", content: "hi" }], max_tokens: 2 }).then(() => "served", (e: Error) => e.message);
    expect(failed).not.toBe("served");
  }, 90_000);

  test("a LoRA adapter is a model of its own: listed, served under its name and KV-routed on its own block hashes", async () => {
    await using tmp = await makeTempDir("kvcr-dyn-");
    const [systemPort] = pickFreePorts("127.0.0.1", 1);
    await using kv = await startStack(tmp.path, "kv", ["--lora-modules", "sql-adapter=/adapters/sql"], undefined, { DYN_SYSTEM_PORT: String(systemPort) }, ["mock-model", "sql-adapter"]);
    // The same prompt under the base model first: its blocks are the base model's.
    const baseFirst = await kv.client.chat.completions.create({ model: "mock-model", messages: [{ role: "user", content: prefix(0) }], max_tokens: 4 });
    expect(baseFirst.usage!.prompt_tokens_details?.cached_tokens ?? 0).toBeLessThanOrEqual(16);
    const { share, firstHits } = await hitShare(kv.client, "sql-adapter");
    // Under the adapter the base model's blocks are no hit, not even the chat template's first one
    // (the adapter's own requests share that one): Dynamo's router hashes as the workers do.
    expect(firstHits[0]).toBe(0);
    for (const hit of firstHits) expect(hit).toBeLessThanOrEqual(16);
    expect(share, kv.frontendLog().slice(-3000)).toBeGreaterThanOrEqual(0.6);
    const metrics = await (await fetch(`http://127.0.0.1:${systemPort}/metrics`)).text();
    expect(metrics).toContain(`kvcr_mocker_lora_requests_total{lora_name="sql-adapter"} ${PREFIXES * REPEATS}`);
  }, 120_000);

  test("host-tier (G2) events are indexed by Dynamo's router beside the device's, every event applied", async () => {
    await using tmp = await makeTempDir("kvcr-dyn-");
    // A device cache of 40 blocks: each ~15-block prompt pushes the older ones out to the host tier.
    await using kv = await startStack(tmp.path, "kv", ["--num-gpu-blocks-override", "40", "--num-host-blocks", "400"]);
    const ask = (i: number) => kv.client.chat.completions.create({ model: "mock-model", messages: [{ role: "user", content: `${i} ${"long prompt text ".repeat(12)}` }], max_tokens: 2 });
    const DISTINCT = 6;
    for (let i = 0; i < DISTINCT; i++) await ask(i);
    const applied = async () => {
      const lines = (await (await fetch(kv.client.baseURL.replace(/\/v1$/, "/metrics"))).text()).split("\n").filter((l) => l.startsWith("dynamo_component_kv_cache_events_applied{"));
      const count = (type: string, status: string) => lines.filter((l) => l.includes(`event_type="${type}"`) && l.includes(`status="${status}"`)).reduce((n, l) => n + Number(l.slice(l.lastIndexOf(" ") + 1)), 0);
      const failed = lines.filter((l) => !l.includes('status="ok"') && !l.endsWith(" 0"));
      return { stored: count("stored", "ok"), failed };
    };
    // One device store and one host store per new prompt, all applied; none refused.
    await waitFor(async () => (await applied()).stored >= 2 * DISTINCT, { what: "the router to apply the device and host stores", timeoutMs: 10_000 });
    expect((await applied()).failed).toEqual([]);
  }, 120_000);

  test.if(etcdAvailable())("with etcd discovery (Dynamo's default backend) and a Dynamo launch line's flags: served and KV-routed the same way", async () => {
    await using tmp = await makeTempDir("kvcr-dyn-");
    await using etcd = await startEtcd();
    // With flags of a Dynamo launch script kvcr-mock takes as Dynamo's mocker does (or accepts, warning).
    await using kv = await startStack(tmp.path, "kv", ["--engine-type", "vllm", "--router-mode", "kv", "--no-load-aware", "--gpu-memory-utilization", "0.9"], etcd);
    expect(kv.mockerLog()).toContain("--router-mode kv: Dynamo's mocker flag, accepted and ignored");
    const { share } = await hitShare(kv.client);
    expect(share).toBeGreaterThanOrEqual(0.6);
  }, 120_000);
});
