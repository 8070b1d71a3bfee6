// Prefill and decode workers under Dynamo's own frontend (peers environment): kvcr-mock's
// `--disaggregation-mode prefill|decode` with `--runtime dynamo` register as Dynamo's mocker does,
// Dynamo's frontend sends each request's prefill leg to the prefill worker and its decode leg to
// the decode worker, and the KV is handed over: with --bootstrap-ports through Dynamo's rendezvous
// (both legs at once; Dynamo's own decode mocker meets a kvcr-mock prefill too), without it one leg
// after the other, the decode pulling what the prefill answered.
import { describe, expect, test } from "bun:test";
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import OpenAI from "openai";
import { pickFreePorts } from "../../src/transport/port-hold.ts";
import { CLI_ENTRY, makeTempDir, pipeOutput, spawnChild, waitFor, type SpawnedChild } from "../harness.ts";
import { PEERS_PYTHON, peerEnv, peersAvailable } from "../peers.ts";

const REQUESTS = 6;

type Side = "prefill" | "decode";
type Worker = { kind: "kvcr"; flags?: string[] } | { kind: "dynamo"; flags?: string[] };

interface Pair extends AsyncDisposable {
  client: OpenAI;
  /** A counter on a kvcr-mock worker's DYN_SYSTEM_PORT /metrics (summed over its labels). */
  metric(side: Side, name: string): Promise<number>;
  logs(): string;
}

function promptOf(i: number): string {
  return `Request ${i}: ${Array.from({ length: 60 }, (_, j) => `t${i}y${(j * 31 + i * 977) % 9973}`).join(" ")}`;
}

async function startPair(root: string, prefill: Worker, decode: Worker): Promise<Pair> {
  const model = join(root, "model");
  const discovery = join(root, "kv");
  const env = peerEnv({ DYN_DISCOVERY_BACKEND: "file", DYN_FILE_KV: discovery, DYN_TCP_RESPONSE_STREAM_HOST: "127.0.0.1", DYN_EVENT_PLANE_HOST: "127.0.0.1", DYN_TCP_RPC_HOST: "127.0.0.1", TMPDIR: root });
  if (!existsSync(model)) {
    await using mf = spawnChild([process.execPath, CLI_ENTRY, "model-files", "--out", model, "--log-level", "warn"]);
    expect(await mf.proc.exited).toBe(0);
  }
  const children: SpawnedChild[] = [];
  let out = "";
  const systemPorts: Partial<Record<Side, number>> = {};
  const common = ["--model-path", model, "--model-name", "mock-model", "--block-size", "16", "--speedup-ratio", "0", "--discovery-backend", "file"];
  for (const [side, w] of [["prefill", prefill], ["decode", decode]] as const) {
    const argv = w.kind === "kvcr"
      ? [process.execPath, CLI_ENTRY, "mocker", "--runtime", "dynamo", ...common, "--disaggregation-mode", side, "--log-level", "debug", ...(w.flags ?? [])]
      : [PEERS_PYTHON!, "-m", "dynamo.mocker", ...common, "--request-plane", "tcp", "--event-plane", "zmq", "--disaggregation-mode", side, ...(w.flags ?? [])];
    const extra: Record<string, string> = {};
    if (w.kind === "kvcr") {
      systemPorts[side] = pickFreePorts("127.0.0.1", 1)[0]!;
      extra.DYN_SYSTEM_PORT = String(systemPorts[side]);
    }
    const child = spawnChild(argv, { env: { ...env, ...extra } });
    pipeOutput(child, (t) => (out += `[${side}] ${t}`));
    children.push(child);
  }
  await waitFor(() => existsSync(join(discovery, "v1/mdc")) && readdirSync(join(discovery, "v1/mdc")).length === 2, { what: `two model cards (logs:\n${out.slice(-3000)})`, timeoutMs: 30_000 });
  const [port] = pickFreePorts("127.0.0.1", 1);
  const frontend = spawnChild([PEERS_PYTHON!, "-m", "dynamo.frontend", "--http-host", "127.0.0.1", "--http-port", String(port), "--router-mode", "kv",
    "--discovery-backend", "file", "--request-plane", "tcp", "--event-plane", "zmq"], { env });
  pipeOutput(frontend, (t) => (out += `[frontend] ${t}`));
  children.push(frontend);
  const base = `http://127.0.0.1:${port}`;
  await waitFor(async () => {
    try {
      const models = (await (await fetch(`${base}/v1/models`)).json()) as { data: { id: string }[] };
      return models.data.some((m) => m.id === "mock-model");
    } catch {
      return false;
    }
  }, { what: `Dynamo's frontend to list mock-model (logs:\n${out.slice(-3000)})`, timeoutMs: 60_000 });
  const metric = async (side: Side, name: string) => {
    const text = await (await fetch(`http://127.0.0.1:${systemPorts[side]}/metrics`)).text();
    return text.split("\n").filter((l) => l.startsWith(`${name} `) || l.startsWith(`${name}{`)).reduce((sum, l) => sum + Number(l.slice(l.lastIndexOf(" ") + 1)), 0);
  };
  return {
    client: new OpenAI({ baseURL: `${base}/v1`, apiKey: "none", maxRetries: 0 }),
    metric,
    logs: () => out,
    async [Symbol.asyncDispose]() {
      for (const c of children.reverse()) await c[Symbol.asyncDispose]();
    },
  };
}

/** Requests until the frontend has seen the prefill worker (its first legs may come before it did), then REQUESTS more; each served whole. */
async function serve(pair: Pair, prefillServed: () => Promise<number>): Promise<void> {
  await waitFor(async () => {
    await pair.client.chat.completions.create({ model: "mock-model", messages: [{ role: "user", content: "warm up" }], max_tokens: 2 }).catch(() => undefined);
    return (await prefillServed()) > 0;
  }, { what: `a prefill leg to reach the prefill worker (logs:\n${pair.logs().slice(-3000)})`, timeoutMs: 30_000 });
  for (let i = 0; i < REQUESTS; i++) {
    const messages = [{ role: "user" as const, content: promptOf(i) }];
    if (i % 2 === 0) {
      const answer = await pair.client.chat.completions.create({ model: "mock-model", messages, max_tokens: 5 });
      expect(answer.choices[0]!.finish_reason).toBe("length");
      expect(answer.usage!.completion_tokens).toBe(5);
    } else {
      let chunks = 0;
      let finish: string | null | undefined;
      for await (const c of await pair.client.chat.completions.create({ model: "mock-model", messages, max_tokens: 5, stream: true })) {
        chunks++;
        finish = c.choices[0]?.finish_reason ?? finish;
      }
      expect(finish).toBe("length");
      expect(chunks).toBeGreaterThanOrEqual(2);
    }
  }
}

describe.if(peersAvailable())("prefill and decode workers under Dynamo's frontend (peers environment)", () => {
  test("with --bootstrap-ports: both legs at once, the decode meets the prefill's room and loads the prompt's KV from it", async () => {
    await using tmp = await makeTempDir("kvcr-dyn-pd-");
    await using pair = await startPair(tmp.path, { kind: "kvcr", flags: ["--bootstrap-ports", "0"] }, { kind: "kvcr" });
    await serve(pair, () => pair.metric("prefill", "kvcr_mocker_dynamo_requests_total"));
    const legs = await pair.metric("prefill", "kvcr_mocker_dynamo_requests_total");
    expect(legs).toBeGreaterThanOrEqual(REQUESTS + 1);
    // Every decode leg that reached the decode worker after the prefill was known met its room.
    expect(await pair.metric("prefill", "kvcr_mocker_dynamo_handoffs_total")).toBe(legs);
    expect(await pair.metric("prefill", "kvcr_mocker_kv_pulled_holds_total")).toBe(legs);
    expect(await pair.metric("prefill", "kvcr_mocker_kv_held_blocks")).toBe(0);
    expect(await pair.metric("decode", "kvcr_mocker_kv_transfers_total")).toBeGreaterThanOrEqual(REQUESTS);
    expect(await pair.metric("decode", "kvcr_mocker_kv_recomputed_pulls_total")).toBe(0);
  }, 150_000);

  test("without: the decode leg follows the prefill's answer and pulls the KV it names", async () => {
    await using tmp = await makeTempDir("kvcr-dyn-pd-");
    await using pair = await startPair(tmp.path, { kind: "kvcr" }, { kind: "kvcr" });
    await serve(pair, () => pair.metric("prefill", "kvcr_mocker_dynamo_requests_total"));
    const legs = await pair.metric("prefill", "kvcr_mocker_dynamo_requests_total");
    await waitFor(async () => (await pair.metric("prefill", "kvcr_mocker_kv_pulled_holds_total")) === legs, { what: "every held prefill to be pulled", timeoutMs: 5_000 });
    expect(await pair.metric("decode", "kvcr_mocker_kv_transfers_total")).toBeGreaterThanOrEqual(REQUESTS);
    expect(await pair.metric("decode", "kvcr_mocker_kv_recomputed_pulls_total")).toBe(0);
    expect(await pair.metric("prefill", "kvcr_mocker_dynamo_handoffs_total")).toBe(0);
  }, 150_000);

  test("Dynamo's own decode mocker meets a kvcr-mock prefill worker's room", async () => {
    await using tmp = await makeTempDir("kvcr-dyn-pd-");
    await using pair = await startPair(tmp.path, { kind: "kvcr", flags: ["--bootstrap-ports", "0"] }, { kind: "dynamo" });
    await serve(pair, () => pair.metric("prefill", "kvcr_mocker_dynamo_requests_total"));
    const legs = await pair.metric("prefill", "kvcr_mocker_dynamo_requests_total");
    expect(await pair.metric("prefill", "kvcr_mocker_dynamo_handoffs_total")).toBe(legs);
    expect(await pair.metric("prefill", "kvcr_mocker_dynamo_handoffs_timed_out_total")).toBe(0);
  }, 150_000);

  test("a kvcr-mock decode worker meets the room of Dynamo's own prefill mocker", async () => {
    await using tmp = await makeTempDir("kvcr-dyn-pd-");
    // Dynamo's mocker advertises the port it is given (0 would be advertised as 0): one picked here.
    await using pair = await startPair(tmp.path, { kind: "dynamo", flags: ["--bootstrap-ports", String(pickFreePorts("127.0.0.1", 1)[0])] }, { kind: "kvcr" });
    await serve(pair, () => pair.metric("decode", "kvcr_mocker_kv_transfers_total"));
    expect(await pair.metric("decode", "kvcr_mocker_kv_transfers_total")).toBeGreaterThanOrEqual(REQUESTS);
    expect(await pair.metric("decode", "kvcr_mocker_kv_recomputed_pulls_total")).toBe(0);
  }, 150_000);
});
