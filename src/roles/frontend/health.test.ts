// The frontend's /health: degraded while an agent re-syncs or reports degraded slots, or discovery
// is degraded, 200 unless --strict-health (then 503); "no workers" stays 503.
import { describe, expect, test } from "bun:test";
import { createLogger } from "../../lib/logger.ts";
import { AgentFeed } from "./agent-feed.ts";
import { healthResponse } from "./health.ts";
import type { RoutingState } from "./routing-state.ts";

const agents = (resyncing: number, degraded: number) => ({ followed: 1, resyncing, degraded_slots: degraded });

describe("frontend /health", () => {
  test("healthy, degraded (200, or 503 with --strict-health) and no workers", async () => {
    const ok = healthResponse({ workerCount: 2, models: ["m"], agents: agents(0, 0), strict: true });
    expect([ok.status, await ok.json()]).toEqual([200, { status: "healthy", instances: 2, ejected: 0, models: ["m"], agents: agents(0, 0) }]);
    for (const a of [agents(1, 0), agents(0, 2), { followed: 0, resyncing: 0, degraded_slots: 0, workers_without_agent: 2 }]) {
      const lax = healthResponse({ workerCount: 2, models: ["m"], agents: a, strict: false });
      expect([lax.status, ((await lax.json()) as { status: string }).status]).toEqual([200, "degraded"]);
      const strict = healthResponse({ workerCount: 2, models: ["m"], agents: a, strict: true });
      expect([strict.status, ((await strict.json()) as { status: string }).status]).toEqual([503, "degraded"]);
    }
    const none = healthResponse({ workerCount: 0, models: [], strict: false });
    expect([none.status, ((await none.json()) as { status: string }).status]).toEqual([503, "no workers"]);
  });

  test("a worker out of routing makes the frontend degraded; every worker out of it, no workers (503)", async () => {
    const some = healthResponse({ workerCount: 2, ejected: 1, models: ["m"], strict: false });
    expect([some.status, await some.json()]).toEqual([200, { status: "degraded", instances: 2, ejected: 1, models: ["m"] }]);
    const all = healthResponse({ workerCount: 2, ejected: 2, models: ["m"], strict: false });
    expect([all.status, ((await all.json()) as { status: string }).status]).toEqual([503, "no workers"]);
  });

  test("degraded discovery (a silent etcd member, lost quorum, store unreachable) makes the frontend degraded", async () => {
    const discovery = { backend: "etcd", connected: true, degraded: true, degradedReason: "etcd quorum lost: 2 of 3 members do not answer", quorum: false };
    const lax = healthResponse({ workerCount: 2, models: ["m"], discovery, strict: false });
    expect([lax.status, await lax.json()]).toEqual([200, { status: "degraded", instances: 2, ejected: 0, models: ["m"], discovery }]);
    const strict = healthResponse({ workerCount: 2, models: ["m"], discovery, strict: true });
    expect([strict.status, ((await strict.json()) as { status: string }).status]).toEqual([503, "degraded"]);
    const fine = healthResponse({ workerCount: 2, models: ["m"], discovery: { backend: "file", connected: true, degraded: false }, strict: true });
    expect([fine.status, ((await fine.json()) as { status: string }).status]).toEqual([200, "healthy"]);
  });

  test("an agent whose stream is not connected counts as re-syncing; dropping it ends that", () => {
    const listener = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
    const port = listener.port;
    listener.stop(true);
    const feed = new AgentFeed({} as RoutingState, createLogger({ level: "silent" }), () => Promise.reject(new Error("down")));
    try {
      feed.follow({ agent_id: "a1", http_url: `http://127.0.0.1:${port}`, router_events_endpoint: `tcp://127.0.0.1:${port}`, max_slots: 1 });
      expect(feed.health()).toEqual({ followed: 1, resyncing: 1, degraded_slots: 0 });
      feed.drop("a1");
      expect(feed.health()).toEqual({ followed: 0, resyncing: 0, degraded_slots: 0 });
    } finally {
      feed[Symbol.dispose]();
    }
  });
});
