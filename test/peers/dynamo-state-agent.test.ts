// KVCR mode inside a Dynamo deployment (peers environment): Dynamo's own state agent attaches the
// raw vLLM streams of `kvcr-mock mocker --runtime dynamo --kv-state-agent` (one slot per worker ×
// rank, from the intents the mocker writes), and Dynamo's frontend routes on the events the agent
// republishes: a repeated prefix lands on its holder (round-robin the control), the host tier's
// stores reach the router through the agent, a kill -9 and restart get every slot back, and a host
// short of slots is reported by the mocker with the reason.
import { describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
import OpenAI from "openai";
import { pickFreePorts } from "../../src/transport/port-hold.ts";
import { CLI_ENTRY, makeTempDir, pipeOutput, spawnChild, waitFor, withTimeout, type SpawnedChild } from "../harness.ts";
import { PEERS_PYTHON, peerEnv, peersAvailable } from "../peers.ts";

const WORKERS = 4;

/** Distinct prompts of ~60 blocks each (one token per byte, the chat template around them). */
function prefix(i: number): string {
  return `Prefix ${i}: ${Array.from({ length: 100 }, (_, j) => `w${i}x${(j * 7919 + i * 104729) % 100003}`).join(" ")}`;
}

/** A Prometheus counter or gauge summed over its labels, or by one label value. */
async function metric(url: string, name: string, label?: string): Promise<number> {
  const text = await (await fetch(url)).text();
  return text.split("\n").filter((l) => (l.startsWith(`${name}{`) || l.startsWith(`${name} `)) && (label === undefined || l.includes(label))).reduce((n, l) => n + Number(l.slice(l.lastIndexOf(" ") + 1)), 0);
}

interface Stack extends AsyncDisposable {
  client: OpenAI;
  agentMetrics: string;
  mockerMetrics: string;
  frontendMetrics: string;
  logs(): string;
  startMocker(): SpawnedChild;
  mocker: SpawnedChild;
}

async function startStack(root: string, o: { routerMode?: string; maxSlots?: number; mockerFlags?: string[] } = {}): Promise<Stack> {
  const model = join(root, "model");
  const env = peerEnv({ DYN_DISCOVERY_BACKEND: "file", DYN_FILE_KV: join(root, `kv-${o.routerMode ?? "kv"}`), DYN_TCP_RESPONSE_STREAM_HOST: "127.0.0.1", DYN_EVENT_PLANE_HOST: "127.0.0.1", DYN_TCP_RPC_HOST: "127.0.0.1", TMPDIR: root });
  if (!existsSync(model)) {
    await using mf = spawnChild([process.execPath, CLI_ENTRY, "model-files", "--out", model, "--log-level", "warn"]);
    expect(await mf.proc.exited).toBe(0);
  }
  let out = "";
  const children: SpawnedChild[] = [];
  // Dynamo reads DYN_SYSTEM_PORT as an i16: a port below 32768, picked (Dynamo binds it itself).
  const [agentPort] = pickFreePorts("127.0.0.1", 1, [20_000, 32_767]);
  const agent = spawnChild([PEERS_PYTHON!, "-m", "dynamo.kv_state_agent", "--max-slots", String(o.maxSlots ?? WORKERS)], { env: { ...env, DYN_SYSTEM_PORT: String(agentPort) } });
  pipeOutput(agent, (t) => (out += `[agent] ${t}`));
  children.push(agent);
  const agentMetrics = `http://127.0.0.1:${agentPort}/metrics`;
  await waitFor(async () => (await fetch(`http://127.0.0.1:${agentPort}/live`)).ok, { what: "Dynamo's state agent to be live", timeoutMs: 30_000 });
  const [mockerPort] = pickFreePorts("127.0.0.1", 1);
  const startMocker = () => {
    const m = spawnChild([process.execPath, CLI_ENTRY, "mocker", "--runtime", "dynamo", "--model-path", model, "--model-name", "mock-model", "--discovery-backend", "file",
      "--num-workers", String(WORKERS), "--block-size", "16", "--speedup-ratio", "0", "--log-level", "debug",
      "--kv-state-agent", "--zmq-kv-events-ports", Array(WORKERS).fill(0).join(","), "--num-host-blocks", "512", "--kv-state-agent-raw-host", "127.0.0.1", "--kv-state-agent-cache-slot", "0",
      ...(o.mockerFlags ?? [])], { env: { ...env, DYN_SYSTEM_PORT: String(mockerPort) } });
    pipeOutput(m, (t) => (out += `[mocker] ${t}`));
    children.push(m);
    return m;
  };
  const mocker = startMocker();
  const [port] = pickFreePorts("127.0.0.1", 1);
  const frontend = spawnChild([PEERS_PYTHON!, "-m", "dynamo.frontend", "--http-host", "127.0.0.1", "--http-port", String(port), "--router-mode", o.routerMode ?? "kv",
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
  }, { what: "Dynamo's frontend to list mock-model", timeoutMs: 60_000 });
  return {
    client: new OpenAI({ baseURL: `${base}/v1`, apiKey: "none", maxRetries: 0 }),
    agentMetrics,
    mockerMetrics: `http://127.0.0.1:${mockerPort}/metrics`,
    frontendMetrics: `${base}/metrics`,
    logs: () => out,
    startMocker,
    mocker,
    async [Symbol.asyncDispose]() {
      for (const c of children.reverse()) await c[Symbol.asyncDispose]();
    },
  };
}

const activeSlots = (s: Stack) => metric(s.agentMetrics, "dynamo_component_kv_state_agent_slots", 'state="active"');

/** Stores the router has applied to its index (through the agent, a hop after the worker's own event). */
const storesApplied = (s: Stack) => metric(s.frontendMetrics, "dynamo_component_kv_cache_events_applied", 'event_type="stored",status="ok"');

/**
 * Dynamo's router withholds KV-aware routing while it reconciles state sources it has just
 * discovered, retrying with a growing backoff when a newer record supersedes a reconciliation: a
 * listed model is not yet a KV-routed one. Live once a fresh probe prompt, asked twice, is found
 * cached the second time. Returns how many requests the probes sent.
 */
async function kvRoutingLive(s: Stack): Promise<number> {
  let probes = 0;
  await waitFor(async () => {
    const prompt = prefix(1000 + probes).slice(0, 400); // ~25 blocks, distinct from every test prompt
    probes++;
    const before = await storesApplied(s);
    await s.client.completions.create({ model: "mock-model", prompt, max_tokens: 2 });
    await waitFor(async () => (await storesApplied(s)) > before, { what: "the router to apply the probe's stores", timeoutMs: 10_000 });
    const usage = (await s.client.completions.create({ model: "mock-model", prompt, max_tokens: 2 })).usage!;
    return (usage.prompt_tokens_details?.cached_tokens ?? 0) >= usage.prompt_tokens - 16;
  }, { what: "Dynamo's router to route on the KV state (a repeated probe found cached)", timeoutMs: 30_000 });
  return 2 * probes;
}

/**
 * 8 prefixes × 4 in sequence: the share of prompt tokens the workers found cached. After a
 * prefix's first answer the next request waits until the router has applied the stores it caused
 * (the agent republishes them a hop later than a worker's own events would arrive); round-robin
 * indexes nothing, so nothing is awaited.
 */
async function hitShare(s: Stack, kvRouted = true): Promise<number> {
  let cached = 0;
  let prompt = 0;
  for (let p = 0; p < 8; p++) {
    for (let r = 0; r < 4; r++) {
      const before = await storesApplied(s);
      const answer = await s.client.chat.completions.create({ model: "mock-model", messages: [{ role: "user", content: prefix(p) }], max_tokens: 4 });
      cached += answer.usage!.prompt_tokens_details?.cached_tokens ?? 0;
      prompt += answer.usage!.prompt_tokens;
      if (r === 0 && kvRouted) await waitFor(async () => (await storesApplied(s)) > before, { what: "the router to apply the new prefix's stores", timeoutMs: 10_000 });
    }
  }
  return cached / prompt;
}

describe.if(peersAvailable())("KVCR mode under Dynamo's own state agent (peers environment)", () => {
  test("every slot attached; Dynamo's frontend routes on the agent's events (≥ 60 % cached; round-robin < 10 %)", async () => {
    await using tmp = await makeTempDir("kvcr-dyn-agent-");
    {
      await using kv = await startStack(tmp.path);
      await waitFor(async () => (await activeSlots(kv)) === WORKERS, { what: `${WORKERS} active slots on Dynamo's agent`, timeoutMs: 20_000 });
      await waitFor(async () => (await metric(kv.mockerMetrics, "kvcr_mocker_dynamo_state_agent_attached")) === WORKERS, { what: "the mocker to see every intent attached", timeoutMs: 20_000 });
      await kvRoutingLive(kv);
      expect(await hitShare(kv), kv.logs().slice(-3000)).toBeGreaterThanOrEqual(0.6);
      expect(await metric(kv.agentMetrics, "dynamo_component_kv_state_agent_capacity_rejected_total")).toBe(0);
      // The router's index holds what the agent republished: device and host stores applied, none refused.
      expect(await metric(kv.frontendMetrics, "dynamo_component_kv_cache_events_applied", 'status="ok"')).toBeGreaterThan(0);
      const refused = (await (await fetch(kv.frontendMetrics)).text()).split("\n").filter((l) => l.startsWith("dynamo_component_kv_cache_events_applied{") && !l.includes('status="ok"') && !l.endsWith(" 0"));
      expect(refused).toEqual([]);
    }
    {
      await using rr = await startStack(tmp.path, { routerMode: "round-robin" });
      await waitFor(async () => (await activeSlots(rr)) === WORKERS, { what: `${WORKERS} active slots`, timeoutMs: 20_000 });
      expect(await hitShare(rr, false)).toBeLessThan(0.1);
    }
  }, 180_000);

  test("a prefix held only in the host tier is found through it: the agent passes G2 stores on, the router sends the repeat to its holder", async () => {
    await using tmp = await makeTempDir("kvcr-dyn-agent-");
    // A device cache of 72 blocks: each ~56-block prompt evicts the one before it on its worker;
    // 2,048 host blocks keep them all. Raw prompts (no chat template): no block is shared.
    await using s = await startStack(tmp.path, { mockerFlags: ["--num-gpu-blocks-override", "72", "--num-host-blocks", "2048"] });
    await waitFor(async () => (await activeSlots(s)) === WORKERS, { what: `${WORKERS} active slots`, timeoutMs: 20_000 });
    const probes = await kvRoutingLive(s);
    const ask = async (i: number) => (await s.client.completions.create({ model: "mock-model", prompt: prefix(i), max_tokens: 2 })).usage!;
    const routed = () => [...s.logs().matchAll(/→ worker (\d+) rank/g)].map((m) => Number(m[1])).slice(probes);
    const DISTINCT = 12;
    for (let i = 0; i < DISTINCT; i++) {
      const before = await storesApplied(s);
      await ask(i);
      await waitFor(async () => (await storesApplied(s)) > before, { what: `the router to apply prompt ${i}'s stores`, timeoutMs: 10_000 });
    }
    await waitFor(() => routed().length === DISTINCT, { what: "the mocker to log every request", timeoutMs: 5_000 });
    const first = routed();
    expect(new Set(first).size, "the distinct prompts spread over the workers").toBeGreaterThan(1);
    const externalBefore = await metric(s.mockerMetrics, "vllm:external_prefix_cache_hits_total");
    // All but the last prompt on each worker are in G2 only: the router finds each through the
    // agent's host-tier events and sends the repeat to the worker that holds it.
    const REPEATS = 8;
    for (let i = 0; i < REPEATS; i++) {
      const usage = await ask(i);
      expect(usage.prompt_tokens_details?.cached_tokens ?? 0, s.logs().slice(-2000)).toBeGreaterThanOrEqual(usage.prompt_tokens - 16);
    }
    await waitFor(() => routed().length === DISTINCT + REPEATS, { what: "the mocker to log every repeat", timeoutMs: 5_000 });
    expect(routed().slice(DISTINCT), `repeats' workers against their holders' (all distinct prompts: ${first}); ${s.logs().slice(-3000)}`).toEqual(first.slice(0, REPEATS));
    expect(await metric(s.mockerMetrics, "vllm:external_prefix_cache_hits_total")).toBeGreaterThan(externalBefore);
  }, 120_000);

  test("kill -9 and restart of the mocker: its previous intents go, every slot is active again, nothing refused", async () => {
    await using tmp = await makeTempDir("kvcr-dyn-agent-");
    await using s = await startStack(tmp.path);
    await waitFor(async () => (await activeSlots(s)) === WORKERS, { what: `${WORKERS} active slots`, timeoutMs: 20_000 });
    s.mocker.killGroup();
    await withTimeout(s.mocker.proc.exited, 10_000, "the killed mocker");
    s.startMocker();
    await waitFor(() => s.logs().includes("that process") && s.logs().includes("left behind"), { what: "the restarted mocker to remove its previous records", timeoutMs: 20_000 });
    await waitFor(async () => (await metric(s.mockerMetrics, "kvcr_mocker_dynamo_state_agent_attached")) === WORKERS, { what: "every intent attached again", timeoutMs: 30_000 });
    expect(await activeSlots(s)).toBe(WORKERS);
    expect(await metric(s.agentMetrics, "dynamo_component_kv_state_agent_slots", 'state="failed"')).toBe(0);
    expect(await metric(s.agentMetrics, "dynamo_component_kv_state_agent_capacity_rejected_total")).toBe(0);
    // Served again once the frontend lists the restarted workers' model.
    await waitFor(async () => ((await (await fetch(s.client.baseURL + "/models")).json()) as { data: { id: string }[] }).data.some((m) => m.id === "mock-model"), { what: "the model listed again", timeoutMs: 30_000 });
    const answer = await s.client.chat.completions.create({ model: "mock-model", messages: [{ role: "user", content: prefix(0) }], max_tokens: 2 });
    expect(answer.choices[0]!.finish_reason).toBe("length");
  }, 120_000);

  test("a host short of slots: the mocker reports the owners it refused, with the reason", async () => {
    await using tmp = await makeTempDir("kvcr-dyn-agent-");
    await using s = await startStack(tmp.path, { maxSlots: 2 });
    await waitFor(() => s.logs().includes("not attached by Dynamo's host"), { what: "the mocker to report the refused intents", timeoutMs: 30_000 });
    expect(s.logs()).toContain(`2 of ${WORKERS} CacheOwner(s) not attached by Dynamo's host`);
    expect(s.logs()).toContain("the host has 2 slot(s) (its --max-slots)");
    expect(await metric(s.agentMetrics, "dynamo_component_kv_state_agent_capacity_rejected_total")).toBe(2);
    expect(await metric(s.mockerMetrics, "kvcr_mocker_dynamo_state_agent_attached")).toBe(2);
  }, 90_000);
});
