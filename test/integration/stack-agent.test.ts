// State-agent mode end to end, in one process through each role's start(): agent + 2 mockers
// (state-agent mode) + frontend. Routing follows the agent's stream (a repeated prefix goes back to
// the worker that computed it, fully cached), and a frontend started late recovers the full index
// from the agent's snapshot.
import { describe, expect, test } from "bun:test";
import { openFileDiscoveryStore } from "../../src/discovery/file-store.ts";
import { start as startAgent } from "../../src/roles/agent/start.ts";
import { startFrontend, type FrontendHandle } from "../../src/roles/frontend/start.ts";
import { startMocker } from "../../src/roles/mocker/index.ts";
import { cleanupList, makeTempDir, waitFor, withTimeout } from "../harness.ts";
import { agentConfig } from "./agent-kit.ts";
import { frontendConfig, indexedPrefix } from "./frontend-kit.ts";
import { logger, mockerConfig } from "./mocker-kit.ts";

const cleanups = cleanupList();
const NS = "e2e";

describe("agent + 2 mockers + frontend (state-agent mode)", () => {
  test("routing follows the agent's stream, and a late frontend recovers the same index from the snapshot", async () => {
    const tmp = await makeTempDir("kvcr-e2e-");
    cleanups.push(() => tmp[Symbol.asyncDispose]());
    const shared = ["--namespace", NS, "--discovery-dir", tmp.path];
    const store = await openFileDiscoveryStore({ dir: tmp.path, pollIntervalMs: 25, logger });
    cleanups.push(() => store.close());

    const agent = await startAgent(agentConfig(["--port", "0", ...shared]), { logger, discovery: store });
    cleanups.push(() => agent.close());
    for (const slot of [0, 1]) {
      const argv = [
        "--num-workers", "1", "--block-size", "4", "--num-gpu-blocks-override", "64", "--num-host-blocks", "64", "--speedup-ratio", "0", "--model-name", "m",
        "--kv-state-agent", "--zmq-kv-events-ports", "0", "--kv-state-agent-raw-host", "127.0.0.1", "--kv-state-agent-cache-slot", String(slot), ...shared,
      ];
      const m = await startMocker(mockerConfig(argv), { logger, env: {}, discovery: store });
      cleanups.push(() => m.close());
      await withTimeout(m.ready, 10_000, "mocker registration");
    }
    const startFe = async (): Promise<FrontendHandle> => {
      const fe = await startFrontend(frontendConfig(["--http-port", "0", "--router-mode", "kv", ...shared]), { logger, discovery: store });
      cleanups.push(() => fe.close());
      await waitFor(() => fe.state.workerCount === 2 && fe.agents.liveCount() === 1, { what: "frontend with 2 workers following the agent", timeoutMs: 10_000 });
      return fe;
    };
    const fe = await startFe();
    await waitFor(async () => ((await (await fetch(`${agent.httpUrl}/health`)).json()) as { slots: { active: number } }).slots.active === 2, { what: "2 active agent slots", timeoutMs: 10_000 });

    const send = async (prompt: number[]) => {
      const res = await fetch(`${fe.url}/v1/completions`, { method: "POST", body: JSON.stringify({ model: "m", prompt, max_tokens: 1 }) });
      expect(res.status).toBe(200);
      const body = (await res.json()) as { usage: { prompt_tokens_details: { cached_tokens: number } } };
      return { worker: res.headers.get("x-kvcr-worker")!, cached: body.usage.prompt_tokens_details.cached_tokens };
    };
    const prefixes = [0, 1, 2, 3].map((p) => Array.from({ length: 40 }, (_, i) => 50_000 * (p + 1) + i));
    const holder = new Map<number, string>();
    for (const [p, prefix] of prefixes.entries()) {
      holder.set(p, (await send(prefix)).worker);
      // The agent ingests the worker's raw stream and republishes it; the frontend indexes it.
      await waitFor(() => indexedPrefix(fe, prefix) === 10, { what: `prefix ${p} in the frontend's index via the agent` });
    }
    for (let round = 0; round < 2; round++) {
      for (const [p, prefix] of prefixes.entries()) {
        const r = await send([...prefix, 7, 7, 7, 7, round]);
        expect(r.worker).toBe(holder.get(p)!);
        expect(r.cached).toBeGreaterThanOrEqual(40); // round 1 also hits round 0's [7, 7, 7, 7] block
      }
    }

    const late = await startFe();
    await waitFor(() => (["device", "host", "disk"] as const).every((t) => late.state.index.size(t) === fe.state.index.size(t)), { what: "the late frontend's index to equal the first one's" });
    expect(late.state.index.size("device")).toBeGreaterThanOrEqual(40);
    for (const prefix of prefixes) expect(indexedPrefix(late, prefix)).toBe(10);
    expect(late.agents.snapshotsLoaded).toBeGreaterThanOrEqual(1);
  });
});
