// Every role shows its discovery connection: a `discovery` object on /health (never what makes a
// role unhealthy: it keeps serving through an outage, but an outage, a silent etcd member or a lost
// quorum make it "degraded") and kvcr_discovery_* on /metrics.
import { describe, expect, test } from "bun:test";
import { discoveryHealth, discoveryMetricFamilies } from "../../src/discovery/status.ts";
import type { DiscoveryStatus, DiscoveryStore } from "../../src/discovery/store.ts";
import { createLogger } from "../../src/lib/logger.ts";
import { createBlockHasher } from "../../src/lib/xxh3.ts";
import { renderMetrics } from "../../src/protocol/prometheus.ts";
import { KvStateAgent } from "../../src/roles/agent/agent.ts";
import { createAgentApp } from "../../src/roles/agent/http-app.ts";
import { RouterEventOutbound } from "../../src/roles/agent/outbound.ts";
import { createMockerFetch, type WorkerPool } from "../../src/roles/mocker/http-app.ts";
import { app, ndjsonWorker, routingState, workerRecord } from "../routing/fake-fleet.ts";

const logger = createLogger({ level: "silent" });

/** A store whose status a test sets (the methods that move records are never called here). */
function statusStore(status: DiscoveryStatus): DiscoveryStore {
  return { backend: status.backend, status: () => status } as unknown as DiscoveryStore;
}
/** Three members, the first silent: the store moved to the second. */
const hungMember: DiscoveryStatus = {
  backend: "etcd",
  connected: true,
  endpoint: "http://10.0.0.2:2379",
  reconnects: 0,
  leaseRegrants: 0,
  watchResyncs: 0,
  members: [
    { endpoint: "http://10.0.0.1:2379", answering: false, lastError: "no answer within 3000 ms" },
    { endpoint: "http://10.0.0.2:2379", answering: true, leader: true },
    { endpoint: "http://10.0.0.3:2379", answering: true, leader: true },
  ],
  quorum: true,
  degradedReason: "etcd member http://10.0.0.1:2379 (no answer within 3000 ms) does not answer",
  memberFailovers: 1,
  staleEventsIgnored: 2,
};
const down: DiscoveryStatus = { backend: "etcd", connected: false, endpoint: "http://10.0.0.1:2379", lastError: "etcd unreachable at http://10.0.0.1:2379: refused", reconnects: 2, leaseRegrants: 1, watchResyncs: 0 };

describe("discovery status on /health and /metrics", () => {
  test("the health view names the backend, the connection and, while down, the last error", () => {
    expect(discoveryHealth(statusStore(down))).toEqual({ backend: "etcd", connected: false, endpoint: "http://10.0.0.1:2379", lastError: down.lastError, degraded: true, degradedReason: down.lastError });
    expect(discoveryHealth(statusStore({ ...down, connected: true }))).toEqual({ backend: "etcd", connected: true, endpoint: "http://10.0.0.1:2379", degraded: false });
  });

  test("a silent member or a lost quorum makes discovery degraded although it is connected; the members and quorum are shown", () => {
    const health = discoveryHealth(statusStore(hungMember));
    expect(health).toEqual({
      backend: "etcd",
      connected: true,
      endpoint: "http://10.0.0.2:2379",
      degraded: true,
      degradedReason: hungMember.degradedReason,
      quorum: true,
      members: hungMember.members,
    });
    const text = renderMetrics(discoveryMetricFamilies(statusStore(hungMember)));
    expect(text).toContain('kvcr_discovery_degraded{backend="etcd"} 1\n');
    expect(text).toContain('kvcr_discovery_member_answering{backend="etcd",endpoint="http://10.0.0.1:2379"} 0\n');
    expect(text).toContain('kvcr_discovery_member_answering{backend="etcd",endpoint="http://10.0.0.2:2379"} 1\n');
    expect(text).toContain('kvcr_discovery_quorum{backend="etcd"} 1\n');
    expect(text).toContain('kvcr_discovery_member_failovers_total{backend="etcd"} 1\n');
    expect(text).toContain('kvcr_discovery_stale_events_ignored_total{backend="etcd"} 2\n');
  });

  test("a store without status() counts as connected", () => {
    expect(discoveryHealth({ backend: "file" } as unknown as DiscoveryStore)).toEqual({ backend: "file", connected: true, degraded: false });
  });

  test("the metric families carry the connection, reconnects and lease regrants", () => {
    const text = renderMetrics(discoveryMetricFamilies(statusStore(down)));
    expect(text).toContain('kvcr_discovery_connected{backend="etcd"} 0\n');
    expect(text).toContain('kvcr_discovery_reconnects_total{backend="etcd"} 2\n');
    expect(text).toContain('kvcr_discovery_lease_regrants_total{backend="etcd"} 1\n');
  });

  /** Runs `fn` against an agent app whose discovery is down (or as `status` says). */
  async function withAgentDiscoveryDown(fn: (a: ReturnType<typeof createAgentApp>) => Promise<void>, status = down): Promise<void> {
    await using outbound = new RouterEventOutbound("127.0.0.1", 0, logger);
    const agent = new KvStateAgent({ maxSlots: 2, retentionMs: 1000, replayTimeoutMs: 1000, logger, hasher: createBlockHasher(), outbound });
    try {
      await fn(createAgentApp(agent, () => true, statusStore(status)));
    } finally {
      agent.close();
    }
  }

  test("agent: /health stays 200 with discovery down or a member silent, and says degraded", async () => {
    for (const status of [down, hungMember]) {
      await withAgentDiscoveryDown(async (a) => {
        const health = await a.fetch(new Request("http://agent/health"));
        expect(health.status).toBe(200);
        const body = (await health.json()) as { healthy: boolean; status: string; discovery: unknown };
        expect([body.healthy, body.status]).toEqual([true, "degraded"]);
        expect(body.discovery).toEqual(discoveryHealth(statusStore(status)));
      }, status);
    }
    await withAgentDiscoveryDown(async (a) => {
      expect(((await (await a.fetch(new Request("http://agent/health"))).json()) as { status: string }).status).toBe("healthy");
    }, { ...down, connected: true });
  });

  test("agent: /metrics carries the discovery connection", async () => {
    await withAgentDiscoveryDown(async (a) => {
      expect(await (await a.fetch(new Request("http://agent/metrics"))).text()).toContain('kvcr_discovery_connected{backend="etcd"} 0\n');
    });
  });

  test("frontend: /health stays 200 with discovery down or a member silent, and says degraded", async () => {
    const state = routingState("round-robin");
    state.putWorker(workerRecord("a"));
    const f = app(state, ndjsonWorker(), { discoveryHealth: () => discoveryHealth(statusStore(down)) });
    const health = await f.fetch(new Request("http://frontend/health"));
    expect(health.status).toBe(200);
    const body = (await health.json()) as { status: string; discovery: unknown };
    expect(body.status).toBe("degraded");
    expect(body.discovery).toMatchObject({ backend: "etcd", connected: false, degraded: true });
    const hung = await app(state, ndjsonWorker(), { discoveryHealth: () => discoveryHealth(statusStore(hungMember)) }).fetch(new Request("http://frontend/health"));
    expect([hung.status, ((await hung.json()) as { status: string }).status]).toEqual([200, "degraded"]);
    const fine = await app(state, ndjsonWorker(), { discoveryHealth: () => discoveryHealth(statusStore({ ...down, connected: true })) }).fetch(new Request("http://frontend/health"));
    expect([fine.status, ((await fine.json()) as { status: string }).status]).toEqual([200, "healthy"]);
  });

  test("mocker: /health stays 200 with a member silent and says degraded", async () => {
    const pool = (status: DiscoveryStatus): WorkerPool => ({ healthy: () => true, submit: () => ({ ok: false, status: 503, message: "unused" }), cancel: () => {}, metrics: () => [], discovery: () => discoveryHealth(statusStore(status)) });
    const get = (status: DiscoveryStatus) => createMockerFetch(pool(status), { maxPromptTokens: 10, maxOutputTokens: 10 })(new Request("http://mocker/health"));
    const hung = await get(hungMember);
    expect([hung.status, ((await hung.json()) as { status: string }).status]).toEqual([200, "degraded"]);
    const fine = await get({ ...down, connected: true });
    expect([fine.status, ((await fine.json()) as { status: string }).status]).toEqual([200, "healthy"]);
  });
});
