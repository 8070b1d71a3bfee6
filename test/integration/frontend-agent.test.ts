// State-agent mode against a small fake agent (a PUB for the router-event stream + a snapshot
// server, announced by an agent host record): 2 real mockers in state-agent mode with router hints
// and a frontend, in one process. Routing follows the stream (CacheOwner holders mapped to their
// workers), a cursor gap re-syncs from the snapshot, a late frontend recovers the whole index from
// the snapshot, and a kv_hint is attached exactly when another source holds a longer prefix (the
// mocker logs it).
import { describe, expect, test } from "bun:test";
import { openFileDiscoveryStore } from "../../src/discovery/file-store.ts";
import { keys } from "../../src/discovery/keys.ts";
import { createLogger } from "../../src/lib/logger.ts";
import { createBlockHasher } from "../../src/lib/xxh3.ts";
import type { AgentSnapshot } from "../../src/protocol/agent-snapshot.ts";
import type { AgentHostRecord } from "../../src/protocol/records.ts";
import { encodeRouterEvents, type RouterEvent } from "../../src/protocol/router-events.ts";
import { encodeSeq } from "../../src/protocol/seq-frame.ts";
import { startFrontend, type FrontendHandle } from "../../src/roles/frontend/start.ts";
import { startMocker, type MockerHandle } from "../../src/roles/mocker/index.ts";
import { serveHttp } from "../../src/transport/http/server.ts";
import { PubSocket } from "../../src/transport/zmtp/index.ts";
import { cleanupList, makeTempDir, waitFor, withTimeout } from "../harness.ts";
import { frontendConfig, indexedPrefix } from "./frontend-kit.ts";
import { logger, mockerConfig } from "./mocker-kit.ts";

const cleanups = cleanupList();
const hasher = createBlockHasher();
const prompt = Array.from({ length: 96 }, (_, i) => 3000 + i);
const seq = hasher.hashBlocks(prompt, 4);

function capturingLogger(level: "debug" | "info" = "debug") {
  const lines: string[] = [];
  const stream = { write: (s: string) => (lines.push(s), true) } as unknown as NodeJS.WritableStream;
  return { logger: createLogger({ level, stream, format: "json" }), lines };
}

function blocks(from: number, to: number) {
  return Array.from({ length: to - from }, (_, k) => ({ seqHash: seq.sequence[from + k]!, localHash: seq.local[from + k]! }));
}

function snapshotBlocks(n: number) {
  return blocks(0, n).map((b) => ({ seq_hash: String(b.seqHash), local_hash: String(b.localHash) })).sort((a, b) => (BigInt(a.seq_hash) < BigInt(b.seq_hash) ? -1 : 1));
}

class FakeAgent {
  readonly pub = new PubSocket({ logger });
  readonly endpoint = this.pub.bind("tcp://127.0.0.1:0");
  snapshot: AgentSnapshot = { cursor: 0, sources: [] };
  snapshotsServed = 0;
  readonly http = serveHttp({
    host: "127.0.0.1",
    port: 0,
    fetch: async (req) => {
      if (new URL(req.url).pathname !== "/v1/snapshot") return new Response("no", { status: 404 });
      this.snapshotsServed++;
      return Response.json(this.snapshot);
    },
  });

  publish(cursor: number, events: RouterEvent[]): void {
    this.pub.send(["", encodeSeq(BigInt(cursor)), encodeRouterEvents(events)]);
  }

  record(): AgentHostRecord {
    return { agent_id: "fake-agent", http_url: this.http.url, router_events_endpoint: this.endpoint, max_slots: 8 };
  }

  async close(): Promise<void> {
    this.pub.close();
    await this.http.stop(true);
  }
}

describe("frontend in state-agent mode (fake agent, 2 real mockers)", () => {
  test("snapshot + stream, gap re-sync, late join, and router hints", async () => {
    await using dir = await makeTempDir("kvcr-fe-agent-");
    const shared = ["--discovery-dir", dir.path, "--namespace", "agentns"];
    const store = await openFileDiscoveryStore({ dir: dir.path, logger });
    cleanups.push(() => store.close());
    const agent = new FakeAgent();
    cleanups.push(() => agent.close());

    const mockers: { handle: MockerHandle; lines: string[] }[] = [];
    for (const slot of [0, 1]) {
      const cap = capturingLogger();
      const argv = [
        "--num-workers", "1", "--block-size", "4", "--model-name", "m", "--speedup-ratio", "0", "--kv-state-agent", "--zmq-kv-events-ports", "0",
        "--num-host-blocks", "64", "--kv-state-agent-raw-host", "127.0.0.1", "--kv-state-agent-cache-slot", String(slot), "--kv-state-agent-router-hints", ...shared,
      ];
      const handle = await startMocker(mockerConfig(argv), { logger: cap.logger, env: {} });
      cleanups.push(() => handle.close());
      await withTimeout(handle.ready, 10_000, "mocker registration");
      mockers.push({ handle, lines: cap.lines });
    }
    const [a, b] = mockers.map((m) => m.handle.workers[0]!);
    const ownerA = a!.cacheOwnerIds[0]!;
    const ownerB = b!.cacheOwnerIds[0]!;

    // The agent already holds 8 blocks of the prompt for A's CacheOwner (snapshot at cursor 3).
    agent.snapshot = { cursor: 3, sources: [{ cache_owner_id: ownerA, worker_id: a!.workerId, dp_rank: 0, tiers: { device: snapshotBlocks(8), host: [], disk: [] } }] };
    await store.put(keys.agent("agentns", "fake-agent"), agent.record());

    const start = async (mode: string): Promise<FrontendHandle> => {
      const fe = await startFrontend(frontendConfig(["--http-port", "0", "--router-mode", mode, ...shared]), { logger });
      cleanups.push(() => fe.close());
      await waitFor(() => fe.state.workerCount === 2 && fe.agents.liveCount() === 1, { what: "frontend following the agent with 2 workers", timeoutMs: 10_000 });
      return fe;
    };
    const routeOf = (fe: FrontendHandle) => {
      const p = fe.state.route("m", prompt);
      if ("status" in p) throw new Error(p.message);
      fe.state.finish(p);
      return p.worker.id;
    };

    const fe = await start("kv");
    expect(indexedPrefix(fe, prompt)).toBe(8);
    expect(fe.agents.resyncs).toBe(0); // the first snapshot load is no re-sync
    expect(routeOf(fe)).toBe(a!.workerId);

    // The stream from cursor 4: B's CacheOwner stores 12 blocks → routing follows.
    await waitFor(() => agent.pub.subscriberCount("") > 0, { what: "the frontend's subscription" });
    agent.publish(4, [{ holder: { cacheOwnerId: ownerB }, tier: "device", kind: "stored", blocks: blocks(0, 12), parentHash: null }]);
    await waitFor(() => indexedPrefix(fe, prompt) === 12, { what: "B's 12 blocks from the stream" });
    expect(routeOf(fe)).toBe(b!.workerId);

    // A gap (cursor 6 after 4): the frontend re-syncs from the snapshot (now at cursor 6: B holds 16).
    agent.snapshot = {
      cursor: 6,
      sources: [
        { cache_owner_id: ownerA, worker_id: a!.workerId, dp_rank: 0, tiers: { device: snapshotBlocks(8), host: [], disk: [] } },
        { cache_owner_id: ownerB, worker_id: b!.workerId, dp_rank: 0, tiers: { device: snapshotBlocks(16), host: [], disk: [] } },
      ],
    };
    agent.publish(6, [{ holder: { cacheOwnerId: ownerB }, tier: "host", kind: "stored", blocks: blocks(0, 1), parentHash: null }]);
    await waitFor(() => fe.agents.resyncs === 1 && indexedPrefix(fe, prompt) === 16, { what: "a re-sync to the cursor-6 snapshot" });
    // The batch at cursor 6 was in the snapshot already: skipped, not applied twice.
    expect(fe.state.index.footprint(fe.state.rankIdOf(b!.workerId, 0), "host")).toBe(0);
    // And the stream continues from 7.
    agent.publish(7, [{ holder: { workerId: a!.workerId, dpRank: 0 }, tier: "host", kind: "stored", blocks: blocks(8, 16), parentHash: seq.sequence[7]! }]);
    await waitFor(() => fe.state.index.footprint(fe.state.rankIdOf(a!.workerId, 0), "host") === 8, { what: "cursor 7 applied" });

    // A frontend started late recovers the full index from the snapshot.
    agent.snapshot = { ...agent.snapshot, cursor: 7, sources: [agent.snapshot.sources[0]!, agent.snapshot.sources[1]!].map((s, i) => (i === 0 ? { ...s, tiers: { ...s.tiers, host: blocks(8, 16).map((x) => ({ seq_hash: String(x.seqHash), local_hash: String(x.localHash) })) } } : s)) };
    const late = await start("kv");
    for (const tier of ["device", "host", "disk"] as const) expect(late.state.index.size(tier)).toBe(fe.state.index.size(tier));
    expect(routeOf(late)).toBe(b!.workerId);

    // Hints (round-robin, so both workers get requests): A (8 device + 8 host = 16) vs B (16 device):
    // equal, no hint. After B stores 4 more blocks, a request on A carries a hint to B's source endpoint.
    const rr = await start("round-robin");
    await waitFor(() => agent.pub.subscriberCount("") === 3, { what: "all three frontends subscribed" });
    agent.publish(8, [{ holder: { cacheOwnerId: ownerB }, tier: "device", kind: "stored", blocks: blocks(16, 20), parentHash: seq.sequence[15]! }]);
    await waitFor(() => indexedPrefix(rr, prompt) === 20 && indexedPrefix(fe, prompt) === 20, { what: "B's 20 blocks" });
    const res = await Promise.all([0, 1].map(() => fetch(`${rr.url}/v1/completions`, { method: "POST", body: JSON.stringify({ model: "m", prompt, max_tokens: 1 }) })));
    expect(res.map((r) => r.status)).toEqual([200, 200]);
    const hintLine = (lines: string[]) => lines.find((l) => l.includes("router hint for request"));
    const onA = hintLine(mockers[0]!.lines);
    expect(onA).toBeDefined();
    const endpointB = mockers[1]!.handle.endpoints[0]!.hintPorts![0]!;
    expect(onA).toContain(`tcp://127.0.0.1:${endpointB}`);
    expect(onA).toContain(String(seq.sequence[19]!));
    expect(hintLine(mockers[1]!.lines)).toBeUndefined(); // B holds the longest prefix
    expect(await (await fetch(`${rr.url}/metrics`)).text()).toContain("kvcr_frontend_router_hints_total 1");
  });
});
