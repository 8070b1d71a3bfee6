// The agent against real mockers in state-agent mode, all in this process over loopback
// and a file discovery store in a temp dir: per-tier state equals the engines', capacity and
// durable slots, mocker and agent restarts, and a late-joining router that ends with the agent's state.
import { describe, expect, test } from "bun:test";
import { openFileDiscoveryStore } from "../../src/discovery/file-store.ts";
import { keys } from "../../src/discovery/keys.ts";
import type { DiscoveryStore } from "../../src/discovery/store.ts";
import { start as startAgent, type AgentHandle } from "../../src/roles/agent/start.ts";
import { startMocker, type MockerHandle } from "../../src/roles/mocker/index.ts";
import { cleanupList, makeTempDir, waitFor } from "../harness.ts";
import { agentConfig, generate, getSnapshot, LateRouter, nonEmptySets, snapshotSets, type TierSets } from "./agent-kit.ts";
import { logger, mockerConfig } from "./mocker-kit.ts";

const cleanups = cleanupList();

async function discovery(): Promise<{ dir: string; store: () => Promise<DiscoveryStore> }> {
  const tmp = await makeTempDir("kvcr-agent-");
  cleanups.push(() => tmp[Symbol.asyncDispose]());
  return {
    dir: tmp.path,
    store: async () => {
      const s = await openFileDiscoveryStore({ dir: tmp.path, pollIntervalMs: 25, logger });
      cleanups.push(() => s.close());
      return s;
    },
  };
}

const mockerArgs = (dir: string, workers = 2) => [
  "--num-workers", String(workers), "--data-parallel-size", "2", "--zmq-kv-events-ports", Array(workers).fill("0").join(","),
  "--zmq-replay-ports", Array(workers).fill("0").join(","), "--num-host-blocks", "32", "--num-gpu-blocks-override", "24",
  "--block-size", "4", "--speedup-ratio", "0", "--kv-state-agent", "--kv-state-agent-raw-host", "127.0.0.1",
  "--kv-state-agent-cache-slot", "0", "--discovery-dir", dir, "--namespace", "agt",
];

async function mocker(dir: string, store: DiscoveryStore, workers = 2): Promise<MockerHandle> {
  const m = await startMocker(mockerConfig(mockerArgs(dir, workers)), { logger, env: {}, discovery: store });
  cleanups.push(() => m.close());
  await m.ready;
  return m;
}

async function agent(dir: string, store: DiscoveryStore, extra: string[] = []): Promise<AgentHandle> {
  const a = await startAgent(agentConfig(["--port", "0", "--namespace", "agt", "--discovery-dir", dir, "--replay-timeout-ms", "2000", ...extra]), { logger, discovery: store });
  cleanups.push(() => a.close());
  return a;
}

/** What the engines hold, per CacheOwner and tier (seq hashes as decimal strings). */
function engineSets(m: MockerHandle): Map<string, TierSets> {
  const out = new Map<string, TierSets>();
  m.workers.forEach((w, i) =>
    m.pool.ranks[i]!.forEach((rank, r) => {
      const res = rank.engine.inspect().resident;
      out.set(w.cacheOwnerIds[r]!, { device: new Set(res.device.map(String)), host: new Set(res.host.map(String)), disk: new Set() });
    }),
  );
  return out;
}

/** Shared-prefix prompts across every worker and rank (with evictions: 24 G1 blocks per rank). */
async function load(m: MockerHandle, rounds: number, seed = 0): Promise<void> {
  const jobs: Promise<void>[] = [];
  for (let k = 0; k < rounds; k++) {
    for (let w = 0; w < m.workers.length; w++) {
      for (let r = 0; r < 2; r++) {
        const prefix = Array.from({ length: 16 }, (_, i) => i + 1);
        const tail = Array.from({ length: 12 + ((k + seed) % 5) * 4 }, (_, i) => 1000 + (k + seed) * 97 + i * 13 + w);
        jobs.push(generate(m.httpUrl, w, r, [...prefix, ...tail], 3));
      }
    }
  }
  await Promise.all(jobs);
}

/** Waits until the agent's snapshot matches the engines' state (events flow asynchronously). */
async function converged(a: AgentHandle, m: MockerHandle): Promise<void> {
  await waitFor(
    async () => {
      const got = nonEmptySets(snapshotSets(await getSnapshot(a.httpUrl)));
      const want = nonEmptySets(engineSets(m));
      expect(got).toEqual(want);
      return true;
    },
    { timeoutMs: 15_000, what: "agent snapshot == engine residency" },
  );
}

describe("agent with real mockers (state-agent mode, 2 workers × 2 ranks, G2 on)", () => {
  test("the agent's state equals the engines' per tier, through a late router's join and the agent's own restart (rebuilt from replay)", async () => {
    const d = await discovery();
    const store = await d.store();
    const a = await agent(d.dir, store);
    const m = await mocker(d.dir, await d.store());
    await waitFor(() => a.agent.health().slots.active === 4, { timeoutMs: 15_000, what: "4 active slots" });
    await load(m, 6);
    await converged(a, m);
    const snap = await getSnapshot(a.httpUrl);
    expect(snap.sources.some((s) => s.tiers.host.length > 0)).toBe(true); // G2 (kvcr-owned) reached the agent

    // A router joining while events keep flowing ends with exactly the agent's state.
    await using router = new LateRouter(a.eventsEndpoint);
    const more = load(m, 6, 100);
    await router.join(a.httpUrl);
    await more;
    await converged(a, m);
    const final = await getSnapshot(a.httpUrl);
    await router.caughtUp(final.cursor);
    expect(router.gaps).toBe(0);
    expect(router.nonEmpty()).toEqual(nonEmptySets(snapshotSets(final)));

    // Attachment records: one per active slot, naming worker and rank.
    const attachments = await store.list(keys.kindPrefix("agt", "attachment"));
    expect(attachments.map((e) => (e.value as { dp_rank: number }).dp_rank).sort()).toEqual([0, 0, 1, 1]);

    // Agent restart: slots re-attached from intents, state rebuilt from the replay buffers.
    await a.close();
    const b = await agent(d.dir, await d.store());
    await waitFor(() => b.agent.health().slots.active === 4, { timeoutMs: 15_000, what: "4 slots re-attached" });
    await converged(b, m);
    expect(b.agent.health().raw_dropped_batches_total).toBe(0);
    expect(b.agent.health().raw_batches_recovered_total).toBeGreaterThan(0);
  }, 60_000);

  test("with --max-slots 2 and 4 owners, the 2 admitted owners keep their slots across a mocker restart", async () => {
    const d = await discovery();
    const a = await agent(d.dir, await d.store(), ["--max-slots", "2"]);
    const m = await mocker(d.dir, await d.store());
    await waitFor(() => a.agent.health().capacity_rejected_total === 2 && a.agent.health().slots.active === 2, { timeoutMs: 15_000, what: "2 active, 2 rejected" });
    const before = a.agent.slotViews().map((s) => s.cache_owner_id);
    await load(m, 2);
    await m.close();
    await waitFor(() => a.agent.health().slots.detached === 2, { timeoutMs: 15_000, what: "slots detached after the mocker left" });
    const m2 = await mocker(d.dir, await d.store());
    await waitFor(() => a.agent.health().slots.active === 2, { timeoutMs: 15_000, what: "slots re-attached after the mocker restart" });
    const h = a.agent.health();
    expect(h.slots.total).toBe(2);
    expect(h.capacity_rejected_total).toBe(2);
    expect(a.agent.slotViews().map((s) => s.cache_owner_id)).toEqual(before);
    await load(m2, 2);
    const admitted = new Set(before);
    await waitFor(
      async () => {
        const got = nonEmptySets(snapshotSets(await getSnapshot(a.httpUrl)));
        const want = nonEmptySets(new Map([...engineSets(m2)].filter(([k]) => admitted.has(k))));
        expect(got).toEqual(want);
        return true;
      },
      { timeoutMs: 15_000, what: "admitted owners' state after the restart" },
    );
  }, 60_000);

  test("two live intents for one owner (another instance claims a worker's cache owner) fail the slot until one goes", async () => {
    const d = await discovery();
    const a = await agent(d.dir, await d.store());
    const m = await mocker(d.dir, await d.store(), 1);
    await waitFor(() => a.agent.health().slots.active === 2, { timeoutMs: 15_000, what: "2 active slots" });
    const owner = m.workers[0]!.cacheOwnerIds[0]!;
    const mine = (await (await d.store()).list(keys.intentsFor("agt", owner)))[0]!.value as Record<string, unknown>;
    const other = await (await d.store()).put(keys.intent("agt", owner, "impostor"), { ...mine, worker_id: "impostor" });
    await waitFor(() => a.agent.health().slots.failed === 1, { timeoutMs: 15_000, what: "the claimed slot failed (ambiguous)" });
    expect(a.agent.slotViews().find((s) => s.cache_owner_id === owner)!.fault).toContain("ambiguous: 2 live intents");
    expect((await fetch(`${a.httpUrl}/health`)).status).toBe(503);
    expect((await getSnapshot(a.httpUrl)).sources.map((s) => s.cache_owner_id)).not.toContain(owner);
    await other.withdraw();
    await waitFor(() => a.agent.health().slots.active === 2, { timeoutMs: 15_000, what: "slot active again with one intent left" });
    await load(m, 1);
    await converged(a, m);
  }, 60_000);
});
