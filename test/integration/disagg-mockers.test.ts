// vLLM's P/D proxy flow against a prefill and a decode mocker process through their OpenAI APIs
// (the `openai` client): reply params, the pull over the transfer endpoint, a TTFT that carries
// the transfer, both workers' KV events; recompute, hold timeout and bad params too.
import { afterAll, describe, expect, test } from "bun:test";
import OpenAI from "openai";
import { openFileDiscoveryStore } from "../../src/discovery/file-store.ts";
import { keys } from "../../src/discovery/keys.ts";
import { decodeBatch } from "../../src/protocol/kv-events/index.ts";
import type { WorkerRecord } from "../../src/protocol/records.ts";
import { SubSocket } from "../../src/transport/zmtp/index.ts";
import { CLI_ENTRY, makeTempDir, spawnProcess, waitFor } from "../harness.ts";
import { logger } from "./mocker-kit.ts";

// The two processes serve every test of the file: closed after the last (also on failure).
const cleanups: (() => unknown)[] = [];
afterAll(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const MODEL = "mocker-engine";
const BYTES_PER_TOKEN = 1_000_000;
const BANDWIDTH_GBPS = 0.25; // 4 ms per token: a 64-token prompt pulls in 256 ms
const PROMPT = Array.from({ length: 64 }, (_, i) => 100 + i);
const TRANSFER_MS = (PROMPT.length * BYTES_PER_TOKEN) / (BANDWIDTH_GBPS * 1e6);

interface Worker {
  record: WorkerRecord;
  api: OpenAI;
  stored: bigint[];
}

async function startMockerProcess(dir: string, ns: string, extra: string[]): Promise<Worker> {
  const common = ["--block-size", "4", "--num-gpu-blocks-override", "256", "--openai-port-base", "0", "--zmq-kv-events-ports", "0", "--http-port", "0", "--host", "127.0.0.1"];
  const child = spawnProcess([process.execPath, CLI_ENTRY, "mocker", ...common, "--timing-model", "fixed", "--prefill-ms", "5", "--decode-ms", "5", "--discovery-dir", dir, "--namespace", ns, ...extra]);
  cleanups.push(() => child[Symbol.asyncDispose]());
  const store = await openFileDiscoveryStore({ dir, pollIntervalMs: 20, logger });
  cleanups.push(() => store.close());
  let record: WorkerRecord | undefined;
  await waitFor(async () => (record = (await store.list(keys.kindPrefix(ns, "worker")))[0]?.value as WorkerRecord | undefined) !== undefined, {
    timeoutMs: 20_000,
    what: `the ${ns} mocker's worker record (stderr: ${child.stderrText()})`,
  });
  const stored: bigint[] = [];
  const sub = new SubSocket();
  cleanups.push(() => sub.close());
  sub.onMessage((f) => {
    for (const e of decodeBatch(f[2]!).events) if (e.type === "BlockStored") stored.push(...e.blockHashes);
  });
  sub.subscribe("");
  sub.connect(record!.raw_endpoints[0]!);
  return { record: record!, api: new OpenAI({ baseURL: `${record!.openai_url}/v1`, apiKey: "unused", maxRetries: 0 }), stored };
}

async function metric(url: string, name: string): Promise<number> {
  const text = await (await fetch(url.replace(/\/v1\/generate$/, "/metrics"))).text();
  const line = text.split("\n").find((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `));
  return line === undefined ? NaN : Number(line.slice(line.lastIndexOf(" ") + 1));
}

/** The proxy's prefill leg: vLLM's toy proxy sends None for the fields it does not know yet. */
const PREFILL_PARAMS = { do_remote_decode: true, do_remote_prefill: false, remote_engine_id: null, remote_block_ids: null, remote_host: null, remote_port: null };

type WithParams<T> = T & { kv_transfer_params?: Record<string, unknown> };

describe("disaggregated prefill and decode across two mocker processes", async () => {
  const dir = await makeTempDir("kvcr-pd-");
  cleanups.push(() => dir[Symbol.asyncDispose]());
  const prefill = await startMockerProcess(dir.path, "pdprefill", ["--disaggregation-mode", "prefill", "--kv-transfer-hold-timeout", "3"]);
  const decode = await startMockerProcess(dir.path, "pddecode", ["--disaggregation-mode", "decode", "--kv-transfer-bandwidth", String(BANDWIDTH_GBPS), "--kv-bytes-per-token", String(BYTES_PER_TOKEN)]);

  test("the proxy flow: the reply params name real blocks and the advertised endpoint; the decode TTFT carries the transfer; both publish", async () => {
    expect(prefill.record.disaggregation_mode).toBe("prefill");
    expect(decode.record.disaggregation_mode).toBe("decode");
    const [host, port] = prefill.record.kv_transfer_endpoint!.split(":");

    const first = (await prefill.api.completions.create({ model: MODEL, prompt: PROMPT, max_tokens: 8, kv_transfer_params: PREFILL_PARAMS } as never)) as WithParams<OpenAI.Completion>;
    expect(first.usage!.completion_tokens).toBe(1); // a prefill worker forces max_tokens = 1
    const params = first.kv_transfer_params!;
    expect(params).toMatchObject({ do_remote_prefill: true, do_remote_decode: false, remote_host: host, remote_port: Number(port), tp_size: 1 });
    expect(params.remote_engine_id).toBe(`${prefill.record.worker_id}_dp0`);
    expect((params.remote_block_ids as number[]).length).toBe(PROMPT.length / 4);
    expect(await metric(prefill.record.request_url, "kvcr_mocker_kv_held_blocks")).toBe(PROMPT.length / 4);

    const t0 = performance.now();
    const stream = await decode.api.completions.create({ model: MODEL, prompt: PROMPT, max_tokens: 8, stream: true, stream_options: { include_usage: true }, kv_transfer_params: params } as never);
    let ttftMs: number | undefined;
    let usage: OpenAI.CompletionUsage | undefined | null;
    for await (const chunk of stream as unknown as AsyncIterable<OpenAI.Completion>) {
      if (ttftMs === undefined && chunk.choices[0]?.text) ttftMs = performance.now() - t0;
      if (chunk.usage) usage = chunk.usage;
    }
    // A lower bound (the engine cannot sample before the pull lands on its clock), never a tight one.
    expect(ttftMs!).toBeGreaterThanOrEqual(TRANSFER_MS);
    expect(usage).toMatchObject({ completion_tokens: 8, prompt_tokens_details: { cached_tokens: PROMPT.length - 1 } });

    // The decode side measured the pull on its clock and told the prefill side, which freed the blocks.
    expect(await metric(decode.record.request_url, "kvcr_mocker_kv_transfers_total")).toBe(1);
    expect(await metric(decode.record.request_url, "kvcr_mocker_kv_transfer_bytes_total")).toBe(PROMPT.length * BYTES_PER_TOKEN);
    expect(await metric(decode.record.request_url, "vllm:nixl_xfer_time_seconds_sum")).toBeCloseTo(TRANSFER_MS / 1000, 9);
    await waitFor(async () => (await metric(prefill.record.request_url, "kvcr_mocker_kv_pulled_holds_total")) === 1, { timeoutMs: 10_000, what: "the prefill side freeing the pulled blocks" });
    expect(await metric(prefill.record.request_url, "kvcr_mocker_kv_held_blocks")).toBe(0);

    // Both publish the prompt's full blocks: the prefill worker as it computed them, the decode worker once the pull landed.
    await waitFor(() => prefill.stored.length >= 16 && decode.stored.length >= 16, { timeoutMs: 10_000, what: "both workers' BlockStored events" });
    const promptBlocks = prefill.stored.slice(0, 16);
    expect(new Set(decode.stored.slice(0, 16))).toEqual(new Set(promptBlocks));
  });

  test("SGLang's pairing: both legs at once with one bootstrap_room; the decode leg meets it on the transfer port, its TTFT carries the transfer; a closed port is computed here (counted); both kinds of leg at once is a 400", async () => {
    const [host, port] = prefill.record.kv_transfer_endpoint!.split(":");
    const prompt = PROMPT.map((t) => t + 3000);
    const pairing = { bootstrap_host: host, bootstrap_port: Number(port), bootstrap_room: 5_000_000_000_000_123 };
    const transfers = await metric(decode.record.request_url, "kvcr_mocker_kv_transfers_total");
    const t0 = performance.now();
    // The decode leg first: it waits for the room, which the prefill leg then completes.
    const decodeLeg = decode.api.completions.create({ model: MODEL, prompt, max_tokens: 4, ...pairing } as never) as Promise<OpenAI.Completion>;
    await Bun.sleep(50);
    const prefillLeg = (await prefill.api.completions.create({ model: MODEL, prompt, max_tokens: 4, stream: false, ...pairing } as never)) as OpenAI.Completion;
    expect(prefillLeg.usage!.completion_tokens).toBe(1);
    const answer = await decodeLeg;
    expect(performance.now() - t0).toBeGreaterThanOrEqual(TRANSFER_MS);
    expect(answer.usage).toMatchObject({ completion_tokens: 4, prompt_tokens_details: { cached_tokens: prompt.length - 1 } });
    expect(await metric(decode.record.request_url, "kvcr_mocker_kv_transfers_total")).toBe(transfers + 1);

    const recomputed = await metric(decode.record.request_url, "kvcr_mocker_kv_recomputed_pulls_total");
    const lonely = (await decode.api.completions.create({ model: MODEL, prompt: prompt.map((t) => t + 1), max_tokens: 2, ...pairing, bootstrap_port: 1 } as never)) as OpenAI.Completion;
    expect(lonely.usage).toMatchObject({ completion_tokens: 2, prompt_tokens_details: { cached_tokens: 0 } });
    expect(await metric(decode.record.request_url, "kvcr_mocker_kv_recomputed_pulls_total")).toBe(recomputed + 1);

    const both = await fetch(`${decode.record.openai_url}/v1/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model: MODEL, prompt, max_tokens: 2, ...pairing, kv_transfer_params: PREFILL_PARAMS }) });
    expect(both.status).toBe(400);
    expect(((await both.json()) as { error: { message: string } }).error.message).toContain("kv_transfer_params and bootstrap_room");
    for (const [field, value] of [["bootstrap_port", 0], ["bootstrap_host", ""], ["bootstrap_room", -1], ["bootstrap_room", [1, 2]]] as const) {
      const bad = await fetch(`${decode.record.openai_url}/v1/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model: MODEL, prompt, max_tokens: 2, ...pairing, [field]: value }) });
      expect([field, bad.status]).toEqual([field, 400]);
    }
  });

  test("an unknown engine or a dead prefill worker: the decode worker computes the prompt itself (counted)", async () => {
    const before = await metric(decode.record.request_url, "kvcr_mocker_kv_recomputed_pulls_total");
    const [host, port] = prefill.record.kv_transfer_endpoint!.split(":");
    const bogus = { do_remote_prefill: true, do_remote_decode: false, remote_engine_id: "nobody_dp0", remote_request_id: "r-x", remote_block_ids: [0, 1], remote_host: host, remote_port: Number(port) };
    const prompt = PROMPT.map((t) => t + 1000);
    const a = await decode.api.completions.create({ model: MODEL, prompt, max_tokens: 2, kv_transfer_params: bogus } as never);
    expect((a as OpenAI.Completion).usage).toMatchObject({ completion_tokens: 2, prompt_tokens_details: { cached_tokens: 0 } });
    const dead = { ...bogus, remote_port: 1 };
    const b = await decode.api.completions.create({ model: MODEL, prompt: prompt.map((t) => t + 1000), max_tokens: 2, kv_transfer_params: dead } as never);
    expect((b as OpenAI.Completion).usage!.completion_tokens).toBe(2);
    expect(await metric(decode.record.request_url, "kvcr_mocker_kv_recomputed_pulls_total")).toBe(before + 2);
  });

  test("/v1/generate carries both legs too; an unpulled hold times out (counted); wrong types are a 400 naming the field", async () => {
    const prompt = PROMPT.map((t) => t + 5000);
    const res = await fetch(prefill.record.request_url, { method: "POST", body: JSON.stringify({ worker: 0, token_ids: prompt, max_tokens: 4, kv_transfer_params: { do_remote_decode: true } }) });
    const lines = (await res.text()).trim().split("\n").map((l) => JSON.parse(l) as Record<string, unknown>);
    const summary = lines.at(-1)!;
    expect(summary.completion_tokens).toBe(1);
    const params = summary.kv_transfer_params as Record<string, unknown>;
    expect((params.remote_block_ids as number[]).length).toBe(16);
    // Nobody pulls it: the 3 s hold timeout frees it.
    await waitFor(async () => (await metric(prefill.record.request_url, "kvcr_mocker_kv_hold_timeouts_total")) === 1, { timeoutMs: 15_000, what: "the hold timeout" });
    expect(await metric(prefill.record.request_url, "kvcr_mocker_kv_held_blocks")).toBe(0);
    // Its params are stale now: the decode leg over /v1/generate recomputes.
    const before = await metric(decode.record.request_url, "kvcr_mocker_kv_recomputed_pulls_total");
    const late = await fetch(decode.record.request_url, { method: "POST", body: JSON.stringify({ worker: 0, token_ids: prompt, max_tokens: 2, kv_transfer_params: params }) });
    expect((await late.text()).trim().split("\n").length).toBe(3);
    expect(await metric(decode.record.request_url, "kvcr_mocker_kv_recomputed_pulls_total")).toBe(before + 1);

    const bad = await fetch(`${decode.record.openai_url}/v1/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model: MODEL, prompt: PROMPT, kv_transfer_params: { ...params, remote_port: "x" } }) });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { param: string } }).error.param).toBe("kv_transfer_params.remote_port");
    const badGen = await fetch(decode.record.request_url, { method: "POST", body: JSON.stringify({ worker: 0, token_ids: prompt, max_tokens: 2, kv_transfer_params: { do_remote_decode: 1 } }) });
    expect(badGen.status).toBe(400);
    expect(await badGen.text()).toContain("kv_transfer_params.do_remote_decode");
  });
});
