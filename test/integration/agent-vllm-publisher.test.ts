// The agent against an independent publisher (real libzmq + @msgpack/msgpack under Node, as a vLLM
// worker sends), attached through --static-sources and POST /v1/sources: random raw hashes (not
// derived from the token ids), both encodings and both replay layouts, a seq skipped on the live
// stream repaired from replay; without replay the loss is counted and the slot resynced; and the
// agent's fault paths (wrong dp rank, unknown ownership, kvcr on GPU) and lost batches (garbage, a
// payload over the limit: the slot degraded, as vLLM serves no state dump), with the other slots
// unaffected.
import { describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { openFileDiscoveryStore } from "../../src/discovery/file-store.ts";
import { createBlockHasher } from "../../src/lib/xxh3.ts";
import { start as startAgent, type AgentHandle } from "../../src/roles/agent/start.ts";
import type { SlotView } from "../../src/roles/agent/agent.ts";
import { cleanupList, makeTempDir, waitFor } from "../harness.ts";
import { agentConfig, getSnapshot } from "./agent-kit.ts";
import { logger } from "./mocker-kit.ts";
import { VllmPublisher, type WireEvent, type WireHash } from "./vllm-publisher-client.ts";

const cleanups = cleanupList();
const BS = 4;
const owner = (n: number) => `${"ab".repeat(16)}:${"cd".repeat(16)}/${"0".repeat(16)}/${n.toString(16).padStart(32, "0")}`;

async function setup(sources: object[]): Promise<{ agent: AgentHandle; dir: string }> {
  const tmp = await makeTempDir("kvcr-agent-vllm-");
  cleanups.push(() => tmp[Symbol.asyncDispose]());
  const file = join(tmp.path, "sources.json");
  writeFileSync(file, JSON.stringify(sources));
  const store = await openFileDiscoveryStore({ dir: join(tmp.path, "discovery"), pollIntervalMs: 25, logger });
  cleanups.push(() => store.close());
  const agent = await startAgent(agentConfig(["--port", "0", "--static-sources", file, "--replay-timeout-ms", "2000", "--namespace", "vllm"]), { logger, discovery: store });
  cleanups.push(() => agent.close());
  return { agent, dir: tmp.path };
}

async function publisher(): Promise<VllmPublisher> {
  const p = await VllmPublisher.start();
  cleanups.push(() => p[Symbol.asyncDispose]());
  return p;
}

const source = (n: number, ep: { pub: string; replay?: string }, extra: object = {}) => ({
  cache_owner_id: owner(n), worker_id: `vllm-${n}`, dp_rank: 0, block_size: BS, ingress_protocol: "vllm_residency_v1",
  raw_endpoint: ep.pub, raw_topic: "", ...(ep.replay ? { replay_endpoint: ep.replay } : {}), ...extra,
});

const slot = (a: AgentHandle, n: number): SlotView | undefined => a.agent.slotViews().find((s) => s.cache_owner_id === owner(n));
const tokens = (blocks: number, seed: number) => Array.from({ length: blocks * BS }, (_, i) => (seed * 1000 + i * 7) % 60_000);
const u = (x: bigint): WireHash => ({ u: x.toString() });
const stored = (raw: WireHash[], parent: WireHash | null, tok: number[], medium: string | null = "GPU", ownership?: string): WireEvent => ({
  type: "BlockStored", block_hashes: raw, parent_block_hash: parent, token_ids: tok, block_size: BS, medium, ...(ownership ? { ownership } : {}),
});
const removed = (raw: WireHash[], medium = "GPU"): WireEvent => ({ type: "BlockRemoved", block_hashes: raw, medium });

// Random-looking raw names of every wire form: unsigned, signed (negative) and bytes (last 8 bytes, BE).
const R1 = u(0xfedcba9876543210n);
const R2: WireHash = { i: "-1234567890123" };
const R3: WireHash = { b: "0102030405060708090a0b0c" };
const R4 = u(7n);
const R5 = u(2n ** 63n + 5n);
const R6 = u(99n);
const T = [tokens(3, 1), tokens(1, 2), tokens(1, 3), tokens(1, 4)];
/** Router hashes of the one chain t0(3 blocks) → t1 → t2 → t3, computed from the token ids. */
const chain = createBlockHasher().hashBlocks(T.flat(), BS);
const block = (i: number) => ({ seq_hash: chain.sequence[i]!.toString(), local_hash: chain.local[i]!.toString() });
const bySeq = (a: { seq_hash: string }, b: { seq_hash: string }) => (BigInt(a.seq_hash) < BigInt(b.seq_hash) ? -1 : 1);

/** b0 map, b1 array, b2 (host) skipped on live, b3 array removal, b4 map kvcr on host. */
async function publishScript(p: VllmPublisher, id: string): Promise<void> {
  await p.publish(id, [stored([R1, R2, R3], null, T[0]!)], { encoding: "map" });
  await p.publish(id, [stored([R4], R3, T[1]!)], { encoding: "array" });
  await p.publish(id, [stored([R5], R4, T[2]!, "CPU")], { encoding: "map", skipLive: true });
  await p.publish(id, [removed([R4])], { encoding: "array" });
  await p.publish(id, [stored([R6], R5, T[3]!, "CPU_PINNED", "kvcr")], { encoding: "map", dpRank: null });
}

describe("agent with an independent vLLM-style publisher (libzmq + @msgpack/msgpack)", () => {
  for (const layout of ["current", "old"] as const) {
    test(`a seq skipped on live is repaired from replay (${layout} replay layout): exact final state`, async () => {
      const p = await publisher();
      const ep = await p.open("a", { replay: true, layout });
      const { agent } = await setup([source(1, ep)]);
      await p.waitSub("a");
      // The attach back-fill (a replay from 0) must be over first: batches it caught would never be a live gap.
      await p.waitReplay("a", 1);
      await waitFor(() => slot(agent, 1)?.raw_replaying === false, { what: "the attach back-fill to end" });
      await publishScript(p, "a");
      await waitFor(() => slot(agent, 1)?.raw_cursor === 4, { timeoutMs: 15_000, what: "raw cursor 4" });
      expect(slot(agent, 1)).toMatchObject({ state: "active", raw_gaps: 1, raw_dropped_batches: 0, orphan_stores: 0, malformed_events: 0 });
      expect(slot(agent, 1)!.raw_batches_recovered).toBeGreaterThanOrEqual(1);
      const snap = await getSnapshot(agent.httpUrl);
      expect(snap.sources).toHaveLength(1);
      expect(snap.sources[0]!.tiers).toEqual({ device: [0, 1, 2].map(block).sort(bySeq), host: [4, 5].map(block).sort(bySeq), disk: [] });
    }, 30_000);
  }

  test("without a replay endpoint the skipped seq is counted lost and the slot resynced", async () => {
    const p = await publisher();
    const ep = await p.open("a");
    const { agent } = await setup([source(1, ep)]);
    await p.waitSub("a");
    await publishScript(p, "a");
    const fresh = tokens(1, 9);
    await p.publish("a", [stored([u(5n)], null, fresh)]);
    await waitFor(() => slot(agent, 1)?.raw_cursor === 5, { timeoutMs: 15_000, what: "raw cursor 5" });
    // Resync cleared the slot at the gap; b4's parent was lost with it (orphan), b3 removed an unknown block.
    expect(slot(agent, 1)).toMatchObject({ state: "active", raw_gaps: 1, raw_dropped_batches: 1, orphan_stores: 1 });
    const h = createBlockHasher().hashBlocks(fresh, BS);
    const snap = await getSnapshot(agent.httpUrl);
    expect(snap.sources[0]!.tiers).toEqual({ device: [{ seq_hash: h.sequence[0]!.toString(), local_hash: h.local[0]!.toString() }], host: [], disk: [] });
    const health = agent.agent.health();
    expect(health).toMatchObject({ raw_gaps_total: 1, raw_dropped_batches_total: 1, healthy: true });
  }, 30_000);

  test("a publisher restart (seq back to 0) clears the slot before applying", async () => {
    const p = await publisher();
    const ep = await p.open("a", { replay: true });
    const { agent } = await setup([source(1, ep)]);
    await p.waitSub("a");
    await publishScript(p, "a");
    await waitFor(() => slot(agent, 1)?.raw_cursor === 4, { timeoutMs: 15_000, what: "raw cursor 4" });
    await p.restart("a");
    const fresh = tokens(2, 7);
    await p.publish("a", [stored([u(1n), u(2n)], null, fresh)]);
    await waitFor(() => slot(agent, 1)?.raw_cursor === 0, { timeoutMs: 15_000, what: "raw cursor back at 0" });
    const h = createBlockHasher().hashBlocks(fresh, BS);
    const snap = await getSnapshot(agent.httpUrl);
    const want = [0, 1].map((i) => ({ seq_hash: h.sequence[i]!.toString(), local_hash: h.local[i]!.toString() })).sort(bySeq);
    expect(snap.sources[0]!.tiers).toEqual({ device: want, host: [], disk: [] });
    const metrics = await (await fetch(`${agent.httpUrl}/metrics`)).text();
    expect(metrics).toContain("kvcr_agent_publisher_restarts_total 1");
  }, 30_000);

  test("each fault (wrong dp rank, unknown ownership, kvcr on GPU) is confined to its own slot; garbage and an oversized payload are lost batches (degraded: vLLM serves no state dump), not faults", async () => {
    const p = await publisher();
    const ids = ["good", "garbage", "oversized", "rank", "ownership", "kvcrgpu"];
    const eps = await Promise.all(ids.map((id) => p.open(id)));
    // Five from the static file; kvcr-on-GPU attaches at run time through POST /v1/sources.
    const { agent } = await setup(ids.slice(0, 5).map((_, i) => source(i, eps[i]!)));
    const runtime = source(5, eps[5]!, { incarnation: 1 });
    const post = (body: unknown) => fetch(`${agent.httpUrl}/v1/sources`, { method: "POST", body: JSON.stringify(body) });
    expect((await post(runtime)).status).toBe(201);
    expect((await post(runtime)).status).toBe(409);
    const bad = await post({ ...runtime, cache_owner_id: owner(6), raw_endpoint: "http://x" });
    expect(bad.status).toBe(400);
    expect(await bad.text()).toContain("raw_endpoint");
    for (const id of ids) await p.waitSub(id);

    await p.publish("good", [stored([R1, R2, R3], null, T[0]!)]);
    await p.raw("garbage", [new Uint8Array(0), new Uint8Array(8), new Uint8Array([0xc1, 1, 2])]);
    await p.raw("garbage", [new Uint8Array(0)]);
    await p.oversized("oversized", 20 * 1024 * 1024); // over the 16 MiB --max-event-payload-bytes
    await p.publish("rank", [stored([R1], null, tokens(1, 1))], { dpRank: 3 });
    await p.publish("ownership", [stored([R1], null, tokens(1, 1), "CPU", "someone")]);
    await p.publish("kvcrgpu", [stored([R1], null, tokens(1, 1), "GPU", "kvcr")]);
    await p.publish("good", [stored([R4], R3, T[1]!, "DISK")]);

    await waitFor(() => agent.agent.health().slots.quarantined === 3 && slot(agent, 0)?.raw_cursor === 1 && slot(agent, 1)!.decode_errors >= 2 && slot(agent, 2)!.oversize_payloads === 1, { timeoutMs: 15_000, what: "3 quarantined slots, 2 decode errors, 1 oversized payload, good slot at seq 1" });
    const faults = Object.fromEntries(agent.agent.slotViews().map((s) => [s.worker_id, s.fault ?? s.state]));
    expect(faults).toEqual({
      "vllm-0": "active",
      "vllm-1": "active",
      "vllm-2": "active",
      "vllm-3": expect.stringContaining("data_parallel_rank 3"),
      "vllm-4": expect.stringContaining('unknown ownership "someone"'),
      "vllm-5": expect.stringContaining("device medium"),
    });
    // A decode error is a lost batch (resync), not a fault.
    expect(slot(agent, 1)).toMatchObject({ state: "active", raw_dropped_batches: 1, degraded: true });
    // Over the payload limit: dropped and counted, the slot cleared and degraded (no dump to rebuild from).
    expect(slot(agent, 2)).toMatchObject({ state: "active", raw_dropped_batches: 1, degraded: true, oversize_payloads: 1 });
    expect(slot(agent, 2)!.degraded_reason).toContain("serves no state dump");
    const snap = await getSnapshot(agent.httpUrl);
    expect(snap.sources.map((s) => s.worker_id)).toEqual(["vllm-0", "vllm-1", "vllm-2"]);
    expect(snap.sources[0]!.tiers).toEqual({ device: [0, 1, 2].map(block).sort(bySeq), host: [], disk: [block(3)] });
    const health = await (await fetch(`${agent.httpUrl}/health`)).json();
    expect(health).toMatchObject({ healthy: false, slots: { total: 6, active: 3, quarantined: 3, degraded: 2 }, oversize_payloads_total: 1 });
    const metrics = await (await fetch(`${agent.httpUrl}/metrics`)).text();
    expect(metrics).toContain("kvcr_agent_source_faults_total 3");
    expect(metrics).toContain('kvcr_agent_slots{state="quarantined"} 3');
    expect(metrics).toContain("kvcr_agent_oversize_payloads_total 1");

    // A new incarnation of the quarantined runtime source recovers its slot.
    expect((await fetch(`${agent.httpUrl}/v1/sources/${encodeURIComponent(owner(5))}`, { method: "DELETE" })).status).toBe(200);
    expect((await post({ ...runtime, incarnation: 2 })).status).toBe(201);
    await waitFor(() => slot(agent, 5)?.state === "active", { timeoutMs: 15_000, what: "runtime slot re-attached" });
  }, 30_000);
});
