// The agent process is SIGKILLed and started again with the same flags (default --agent-id): it
// takes over its own host record, rebuilds every slot from the mocker's state dump (no replay
// socket, as `up` runs by default), and the frontend, which said "degraded" meanwhile, follows it
// afresh until its index equals the agent's snapshot, which equals the mocker's residency.
import { describe, expect, test } from "bun:test";
import { openFileDiscoveryStore } from "../../src/discovery/file-store.ts";
import { keys } from "../../src/discovery/keys.ts";
import type { AgentSnapshot } from "../../src/protocol/agent-snapshot.ts";
import { startFrontend } from "../../src/roles/frontend/start.ts";
import { startMocker } from "../../src/roles/mocker/index.ts";
import { CLI_ENTRY, cleanupList, heldPort, makeTempDir, spawnBun, waitFor, withTimeout } from "../harness.ts";
import { frontendConfig } from "../integration/frontend-kit.ts";
import { logger, mockerConfig } from "../integration/mocker-kit.ts";

const cleanups = cleanupList();
const NS = "restart";
const TIERS = ["device", "host"] as const;
const sorted = (xs: Iterable<bigint | string>) => [...xs].map(String).sort();

describe("agent kill -9 and restart with default flags", () => {
  test("the frontend says degraded (503 with --strict-health), then within 5 s its index equals the restarted agent's snapshot (= the mocker's residency)", async () => {
    const tmp = await makeTempDir("kvcr-agent-restart-");
    cleanups.push(() => tmp[Symbol.asyncDispose]());
    const shared = ["--namespace", NS, "--discovery-dir", tmp.path];
    const store = await openFileDiscoveryStore({ dir: tmp.path, pollIntervalMs: 25, logger });
    cleanups.push(() => store.close());

    // A stable default id needs a fixed HTTP port (with 0 it is random): one picked now, reused.
    const held = heldPort();
    const agentUrl = `http://127.0.0.1:${held.port}`;
    const agentArgv = ["agent", "--host", "127.0.0.1", "--port", String(held.port), "--log-level", "warn", ...shared];
    held.close();
    const startAgent = async () => {
      const child = spawnBun(CLI_ENTRY, agentArgv);
      cleanups.push(() => child[Symbol.asyncDispose]());
      await waitFor(async () => (await fetch(`${agentUrl}/live`).catch(() => undefined))?.status === 200, { what: "agent /live", timeoutMs: 15_000 });
      return child;
    };
    const agent = await startAgent();

    const m = await startMocker(
      mockerConfig([
        "--num-workers", "1", "--block-size", "4", "--num-gpu-blocks-override", "32", "--num-host-blocks", "32", "--speedup-ratio", "0", "--model-name", "m",
        "--kv-state-agent", "--zmq-kv-events-ports", "0", "--kv-state-agent-raw-host", "127.0.0.1", "--kv-state-agent-cache-slot", "0", ...shared,
      ]),
      { logger, env: {}, discovery: store },
    );
    cleanups.push(() => m.close());
    await withTimeout(m.ready, 10_000, "mocker registration");
    const fe = await startFrontend(frontendConfig(["--http-port", "0", "--router-mode", "kv", "--strict-health", ...shared]), { logger, discovery: store });
    cleanups.push(() => fe.close());
    await waitFor(() => fe.state.workerCount === 1 && fe.agents.liveCount() === 1, { what: "frontend following the agent", timeoutMs: 10_000 });
    await waitFor(() => m.outlets[0]!.publishers[0]!.subscriberCount() > 0, { what: "the agent subscribed to the raw stream", timeoutMs: 10_000 });

    let n = 0;
    const send = async () => {
      const prompt = Array.from({ length: 22 }, (_, i) => 1000 * (n % 5) + i + (n >= 5 ? 500 : 0));
      n++;
      const res = await fetch(`${fe.url}/v1/completions`, { method: "POST", body: JSON.stringify({ model: "m", prompt, max_tokens: 1 }) });
      expect(res.status).toBe(200);
      await res.arrayBuffer();
    };
    const snapshot = async () => (await (await fetch(`${agentUrl}/v1/snapshot`)).json()) as AgentSnapshot;
    const truth = () => m.pool.ranks[0]![0]!.engine.inspect().resident;
    /** Frontend index = agent snapshot = mocker residency, tier by tier. */
    const consistent = async () => {
      const snap = await snapshot();
      const src = snap.sources[0];
      if (snap.sources.length !== 1 || !src) return false;
      const rankId = fe.state.rankIdOf(src.worker_id, src.dp_rank);
      const resident = truth();
      return TIERS.every((t) => {
        const agentHashes = sorted(src.tiers[t].map((b) => b.seq_hash));
        return agentHashes.join() === sorted(fe.state.index.blocksOf(rankId, t)).join() && agentHashes.join() === sorted(resident[t]).join();
      });
    };
    for (let i = 0; i < 5; i++) await send();
    await waitFor(consistent, { what: "frontend index = agent snapshot = mocker residency", timeoutMs: 10_000 });
    expect(truth().device.length).toBeGreaterThan(0);

    // Watch the frontend's /health from now on.
    const statuses = new Set<string>();
    let watching = true;
    const watcher = (async () => {
      while (watching) {
        const res = await fetch(`${fe.url}/health`);
        statuses.add(`${((await res.json()) as { status: string }).status} ${res.status}`);
        await Bun.sleep(10);
      }
    })();
    cleanups.push(async () => {
      watching = false;
      await watcher;
    });

    agent.proc.kill("SIGKILL");
    await agent.proc.exited;
    // --strict-health: degraded is a 503.
    await waitFor(() => statuses.has("degraded 503"), { what: "the frontend to report degraded", timeoutMs: 5000 });
    for (let i = 0; i < 5; i++) await send(); // published while no agent listens: only the dump can bring them back

    await startAgent();
    await waitFor(async () => fe.agents.liveCount() === 1 && (await consistent()), { what: "frontend index = restarted agent's snapshot = mocker residency", timeoutMs: 5000 });
    watching = false;
    await watcher;
    // Healthy again once the agent's slot reports its dump applied (its /health is read every second).
    await waitFor(
      async () => {
        const after = await fetch(`${fe.url}/health`);
        return after.status === 200 && ((await after.json()) as { status: string }).status === "healthy";
      },
      { what: "the frontend's /health to say healthy 200 again", timeoutMs: 5000 },
    );
    // GET /v1/index says which agent cursor its state reflects: at rest, the agent's own.
    const index = (await (await fetch(`${fe.url}/v1/index`)).json()) as { sources: { cursor?: number }[] };
    expect(index.sources.map((s) => s.cursor)).toEqual([(await snapshot()).cursor]);

    // Same default id: one host record, the restarted agent's own.
    const records = await store.list(keys.kindPrefix(NS, "agent"));
    expect(records.length).toBe(1);
    const slots = (await (await fetch(`${agentUrl}/v1/slots`)).json()) as { degraded: boolean; state_dumps_applied: number }[];
    expect(slots).toMatchObject([{ degraded: false }]);
    expect(slots[0]!.state_dumps_applied).toBeGreaterThanOrEqual(1);
  }, 60_000);
});
