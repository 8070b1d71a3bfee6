// Faults and truth on a real mocker (--admin, state-agent mode) with a real agent, in this process
// over loopback: the truth endpoint equals the agent's snapshot on a fault-free run; a dropped
// batch shows as a gap the agent repairs from replay, a renumbered one is a loss only the truth
// shows; http_error, cut_stream and pause as a client sees them; overlaps as counted by hand.
import { describe, expect, test } from "bun:test";
import { openFileDiscoveryStore } from "../../src/discovery/file-store.ts";
import { createBlockHasher } from "../../src/lib/xxh3.ts";
import type { ActiveFault } from "../../src/protocol/faults.ts";
import { GenerateLineReader } from "../../src/protocol/generate.ts";
import type { Residency, ResidencyTiers } from "../../src/protocol/residency.ts";
import { start as startAgent, type AgentHandle } from "../../src/roles/agent/start.ts";
import { startMocker, type MockerHandle } from "../../src/roles/mocker/index.ts";
import { cleanupList, makeTempDir, waitFor } from "../harness.ts";
import { RawHttpClient } from "../raw-http.ts";
import { agentConfig, generate, getSnapshot } from "./agent-kit.ts";
import { logger, mockerConfig } from "./mocker-kit.ts";

const cleanups = cleanupList();
const BLOCK = 4;

async function stack(opts: { agent?: boolean } = {}): Promise<{ m: MockerHandle; a: AgentHandle | undefined }> {
  const tmp = await makeTempDir("kvcr-faults-");
  cleanups.push(() => tmp[Symbol.asyncDispose]());
  const store = await openFileDiscoveryStore({ dir: tmp.path, pollIntervalMs: 25, logger });
  cleanups.push(() => store.close());
  const m = await startMocker(
    mockerConfig([
      "--num-workers", "1", "--data-parallel-size", "2", "--zmq-kv-events-ports", "0", "--zmq-replay-ports", "0",
      "--num-host-blocks", "64", "--num-gpu-blocks-override", "64", "--block-size", String(BLOCK), "--speedup-ratio", "0",
      "--kv-state-agent", "--kv-state-agent-raw-host", "127.0.0.1", "--kv-state-agent-cache-slot", "0",
      "--discovery-dir", tmp.path, "--namespace", "flt", "--admin",
    ]),
    { logger, env: {}, discovery: store },
  );
  cleanups.push(() => m.close());
  await m.ready;
  if (!opts.agent) return { m, a: undefined };
  const a = await startAgent(agentConfig(["--port", "0", "--namespace", "flt", "--discovery-dir", tmp.path, "--replay-timeout-ms", "2000"]), { logger, discovery: store });
  cleanups.push(() => a.close());
  await waitFor(() => a.agent.health().slots.active === 2 && a.agent.slotViews().every((s) => s.connected), { timeoutMs: 15_000, what: "2 active, connected slots" });
  return { m, a };
}

async function postFault(m: MockerHandle, body: object): Promise<ActiveFault> {
  const res = await fetch(`${m.httpUrl}/admin/faults`, { method: "POST", body: JSON.stringify(body) });
  expect(res.status).toBe(201);
  return (await res.json()) as ActiveFault;
}

async function truth(m: MockerHandle): Promise<Residency> {
  return (await (await fetch(`${m.httpUrl}/v1/residency`)).json()) as Residency;
}

/** Per "worker/rank": the tiers, for comparing truth and snapshot. */
function byRank(sources: readonly { worker_id: string; dp_rank: number; tiers: ResidencyTiers }[]): Map<string, ResidencyTiers> {
  return new Map(sources.filter((s) => s.tiers.device.length + s.tiers.host.length > 0).map((s) => [`${s.worker_id}/${s.dp_rank}`, s.tiers]));
}

/** The agent has applied every batch the mocker published, on both ranks. */
async function agentCaughtUp(m: MockerHandle, a: AgentHandle): Promise<void> {
  await waitFor(
    () => a.agent.slotViews().every((s) => !s.raw_replaying && s.raw_cursor === m.outlets[0]!.publishers[s.dp_rank]!.nextSeq - 1),
    { timeoutMs: 15_000, what: "agent at the last published seq" },
  );
}

const prompt = (start: number, blocks: number) => Array.from({ length: blocks * BLOCK }, (_, i) => start + i);

describe("truth and event faults (mocker + agent)", () => {
  test("fault-free: GET /v1/residency equals the agent's snapshot, stamped with the last published seq", async () => {
    const { m, a } = await stack({ agent: true });
    for (let k = 0; k < 4; k++) await generate(m.httpUrl, 0, k % 2, prompt(100 * k, 3 + k), 3);
    await agentCaughtUp(m, a!);
    const t = await truth(m);
    expect(t.sources.map((s) => [s.worker_id, s.dp_rank, s.seq, s.url])).toEqual([0, 1].map((r) => [m.workers[0]!.workerId, r, m.outlets[0]!.publishers[r]!.nextSeq - 1, `${m.httpUrl}/v1/generate`]));
    expect(t.sources[0]!.tiers.device.length).toBeGreaterThan(0);
    expect(byRank((await getSnapshot(a!.httpUrl)).sources)).toEqual(byRank(t.sources));
    const one = (await (await fetch(`${m.httpUrl}/v1/residency?worker=0&dp_rank=1`)).json()) as Residency;
    expect(one.sources).toEqual([t.sources[1]!]);
    expect((await fetch(`${m.httpUrl}/v1/residency?worker=4`)).status).toBe(404);
    expect((await fetch(`${m.httpUrl}/v1/residency?dp_rank=x`)).status).toBe(400);
  });

  test("drop_batches (seq kept): the agent counts a gap, repairs it from replay and ends equal to the truth", async () => {
    const { m, a } = await stack({ agent: true });
    await generate(m.httpUrl, 0, 0, prompt(1, 2), 2);
    await agentCaughtUp(m, a!);
    await postFault(m, { kind: "drop_batches", count: 1, target: { worker: 0, rank: 0 } });
    await generate(m.httpUrl, 0, 0, prompt(500, 3), 2); // its first batch is dropped
    await generate(m.httpUrl, 0, 0, prompt(900, 3), 2); // the next shows the gap
    await waitFor(() => a!.agent.health().raw_gaps_total >= 1 && a!.agent.health().raw_batches_recovered_total >= 1, { timeoutMs: 15_000, what: "gap seen and recovered" });
    await agentCaughtUp(m, a!);
    expect(byRank((await getSnapshot(a!.httpUrl)).sources)).toEqual(byRank((await truth(m)).sources));
    expect(((await (await fetch(`${m.httpUrl}/admin/faults`)).json()) as { faults: unknown[] }).faults).toEqual([]); // count reached
  });

  test("clear_all empties the device tier in the engine and in the stream: the truth and the agent agree, the host tier stays", async () => {
    const { m, a } = await stack({ agent: true });
    for (let k = 0; k < 3; k++) await generate(m.httpUrl, 0, 0, prompt(100 * k, 3), 2);
    await agentCaughtUp(m, a!);
    const before = (await truth(m)).sources[0]!.tiers;
    expect(before.device.length).toBeGreaterThan(0);
    await postFault(m, { kind: "clear_all", target: { rank: 0 } });
    await waitFor(async () => (await truth(m)).sources[0]!.tiers.device.length === 0, { what: "device tier cleared" });
    await agentCaughtUp(m, a!);
    const after = await truth(m);
    expect(after.sources[0]!.tiers.host).toEqual(before.host);
    expect(byRank((await getSnapshot(a!.httpUrl)).sources)).toEqual(byRank(after.sources));
  });

  test("drop_batches with renumber: no gap on the agent, yet its snapshot differs from the truth", async () => {
    const { m, a } = await stack({ agent: true });
    await generate(m.httpUrl, 0, 0, prompt(1, 2), 2);
    await agentCaughtUp(m, a!);
    await postFault(m, { kind: "drop_batches", count: 1, renumber: true, target: { worker: 0, rank: 0 } });
    await generate(m.httpUrl, 0, 0, prompt(500, 3), 2); // its prompt store is lost silently
    await generate(m.httpUrl, 0, 0, prompt(900, 3), 2);
    await agentCaughtUp(m, a!);
    expect(a!.agent.health().raw_gaps_total).toBe(0);
    const t = byRank((await truth(m)).sources);
    const s = byRank((await getSnapshot(a!.httpUrl)).sources);
    const key = `${m.workers[0]!.workerId}/0`;
    const truthDevice = new Set(t.get(key)!.device.map((b) => b.seq_hash));
    const agentDevice = new Set(s.get(key)!.device.map((b) => b.seq_hash));
    const missing = [...truthDevice].filter((h) => !agentDevice.has(h));
    expect(missing.length).toBeGreaterThan(0);
    expect([...agentDevice].filter((h) => !truthDevice.has(h))).toEqual([]);
  });
});

describe("HTTP and process faults (mocker alone)", () => {
  test("http_error 503 at rate 1: every /v1/generate answers 503 with an OpenAI error body, naming the worker", async () => {
    const { m } = await stack();
    const f = await postFault(m, { kind: "http_error", status: 503, rate: 1 });
    expect([f.kind, typeof f.id]).toEqual(["http_error", "string"]);
    for (let r = 0; r < 2; r++) {
      const res = await fetch(`${m.httpUrl}/v1/generate`, { method: "POST", body: JSON.stringify({ worker: 0, dp_rank: r, token_ids: [1, 2, 3], max_tokens: 2 }) });
      expect([res.status, res.headers.get("x-kvcr-worker"), res.headers.get("x-kvcr-dp-rank")]).toEqual([503, m.workers[0]!.workerId, String(r)]);
      expect(((await res.json()) as { error: object }).error).toMatchObject({ type: "service_unavailable", code: "injected_fault", message: expect.stringContaining(f.id) });
    }
    expect((await fetch(`${m.httpUrl}/admin/faults/${f.id}`, { method: "DELETE" })).status).toBe(200);
    const ok = await fetch(`${m.httpUrl}/v1/generate`, { method: "POST", body: JSON.stringify({ worker: 0, token_ids: [1, 2, 3], max_tokens: 2 }) });
    expect([ok.status, ok.headers.get("x-kvcr-worker"), ok.headers.get("x-kvcr-dp-rank")]).toEqual([200, m.workers[0]!.workerId, "0"]);
    await ok.text();
  });

  test("cut_stream: the connection ends after k tokens, without the summary line", async () => {
    const { m } = await stack();
    await postFault(m, { kind: "cut_stream", after_tokens: 3, count: 1 });
    // A raw socket, not fetch: a fetch body that breaks off may throw away chunks that arrived in the
    // same read as the end, so only the bytes on the wire say what the server sent.
    const client = await RawHttpClient.open(Number(new URL(m.httpUrl).port), cleanups);
    const body = JSON.stringify({ worker: 0, token_ids: prompt(1, 2), max_tokens: 50 });
    client.write(`POST /v1/generate HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body}`);
    await client.waitForClose("the cut connection to end");
    const text = client.text;
    const headEnd = text.indexOf("\r\n\r\n");
    expect(text.slice(0, headEnd)).toMatch(/^HTTP\/1\.1 200 /);
    expect(text.slice(0, headEnd).toLowerCase()).toContain("transfer-encoding: chunked");
    // Decode the chunks that came; the body must break off: no last chunk, no summary line.
    let rest = text.slice(headEnd + 4);
    let decoded = "";
    for (;;) {
      const eol = rest.indexOf("\r\n");
      if (eol < 0) break;
      const size = Number.parseInt(rest.slice(0, eol), 16);
      expect(size).toBeGreaterThan(0); // a zero chunk would be a clean end
      decoded += rest.slice(eol + 2, eol + 2 + size);
      rest = rest.slice(eol + 2 + size + 2);
    }
    const lines = [...new GenerateLineReader().push(new TextEncoder().encode(decoded))];
    expect(lines.length).toBe(3);
    expect(lines).toEqual(lines.map((l) => ({ token_id: (l as { token_id: number }).token_id })));
    await waitFor(() => m.pool.inFlight === 0, { what: "the cut request freed" });
  });

  test("pause: a paused rank sends no token while another rank serves; deleting the pause lets it finish", async () => {
    const { m } = await stack();
    const f = await postFault(m, { kind: "pause", target: { worker: 0, rank: 0 } });
    let firstByte = false;
    const paused = fetch(`${m.httpUrl}/v1/generate`, { method: "POST", body: JSON.stringify({ worker: 0, dp_rank: 0, token_ids: prompt(1, 2), max_tokens: 4 }) }).then(async (res) => {
      firstByte = true;
      return res.text();
    });
    await waitFor(() => m.pool.ranks[0]![0]!.engine.pendingRequests === 1, { what: "the request queued on the paused rank" });
    await generate(m.httpUrl, 0, 1, prompt(1, 2), 4); // rank 1 runs meanwhile
    expect([firstByte, m.pool.ranks[0]![0]!.engine.metrics().generatedTokens]).toEqual([false, 0]);
    expect((await fetch(`${m.httpUrl}/admin/faults/${f.id}`, { method: "DELETE" })).status).toBe(200);
    const body = await paused;
    expect(body.trim().split("\n")).toHaveLength(5);
  });

  test("POST /v1/residency/overlap matches overlaps counted by hand", async () => {
    const { m } = await stack();
    const tokens = prompt(7, 4); // 4 full blocks
    await generate(m.httpUrl, 0, 1, tokens, 1);
    const hashes = [...createBlockHasher().hashBlocks(tokens, BLOCK).sequence].map(String);
    const ask = async (body: object) => (await (await fetch(`${m.httpUrl}/v1/residency/overlap`, { method: "POST", body: JSON.stringify(body) })).json()) as { block_size: number; ranks: object[] };
    const workerId = m.workers[0]!.workerId;
    expect(await ask({ token_ids: [...tokens, 99, 98, 97, 96, 95] })).toEqual({
      block_size: BLOCK,
      ranks: [
        { worker_id: workerId, dp_rank: 0, device: 0, host: 0, disk: 0 },
        { worker_id: workerId, dp_rank: 1, device: 4, host: 0, disk: 0 },
      ],
    });
    const partial = await ask({ block_hashes: [hashes[0], hashes[1], "12345", hashes[3]] });
    expect(partial.ranks[1]).toEqual({ worker_id: workerId, dp_rank: 1, device: 2, host: 0, disk: 0 });
    const bad = await fetch(`${m.httpUrl}/v1/residency/overlap`, { method: "POST", body: JSON.stringify({ block_hashes: ["0x1"] }) });
    expect([bad.status, ((await bad.json()) as { error: { param: string } }).error.param]).toEqual([400, "block_hashes[0]"]);
  });
});
