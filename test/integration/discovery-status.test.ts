// Every role shows its discovery connection: a `discovery` object on /health (never what makes a
// role unhealthy: it keeps serving through an outage) and kvcr_discovery_* on /metrics.
import { describe, expect, test } from "bun:test";
import { discoveryHealth, discoveryMetricFamilies } from "../../src/discovery/status.ts";
import type { DiscoveryStatus, DiscoveryStore } from "../../src/discovery/store.ts";
import { createLogger } from "../../src/lib/logger.ts";
import { createBlockHasher } from "../../src/lib/xxh3.ts";
import { renderMetrics } from "../../src/protocol/prometheus.ts";
import { KvStateAgent } from "../../src/roles/agent/agent.ts";
import { createAgentApp } from "../../src/roles/agent/http-app.ts";
import { RouterEventOutbound } from "../../src/roles/agent/outbound.ts";
import { app, ndjsonWorker, routingState, workerRecord } from "../routing/fake-fleet.ts";

const logger = createLogger({ level: "silent" });

/** A store whose status a test sets (the methods that move records are never called here). */
function statusStore(status: DiscoveryStatus): DiscoveryStore {
  return { backend: status.backend, status: () => status } as unknown as DiscoveryStore;
}
const down: DiscoveryStatus = { backend: "etcd", connected: false, endpoint: "http://10.0.0.1:2379", lastError: "etcd unreachable at http://10.0.0.1:2379: refused", reconnects: 2, leaseRegrants: 1, watchResyncs: 0 };

describe("discovery status on /health and /metrics", () => {
  test("the health view names the backend, the connection and, while down, the last error", () => {
    expect(discoveryHealth(statusStore(down))).toEqual({ backend: "etcd", connected: false, endpoint: "http://10.0.0.1:2379", lastError: down.lastError });
    expect(discoveryHealth(statusStore({ ...down, connected: true }))).toEqual({ backend: "etcd", connected: true, endpoint: "http://10.0.0.1:2379" });
  });

  test("a store without status() counts as connected", () => {
    expect(discoveryHealth({ backend: "file" } as unknown as DiscoveryStore)).toEqual({ backend: "file", connected: true });
  });

  test("the metric families carry the connection, reconnects and lease regrants", () => {
    const text = renderMetrics(discoveryMetricFamilies(statusStore(down)));
    expect(text).toContain('kvcr_discovery_connected{backend="etcd"} 0\n');
    expect(text).toContain('kvcr_discovery_reconnects_total{backend="etcd"} 2\n');
    expect(text).toContain('kvcr_discovery_lease_regrants_total{backend="etcd"} 1\n');
  });

  /** Runs `fn` against an agent app whose discovery is down. */
  async function withAgentDiscoveryDown(fn: (a: ReturnType<typeof createAgentApp>) => Promise<void>): Promise<void> {
    await using outbound = new RouterEventOutbound("127.0.0.1", 0, logger);
    const agent = new KvStateAgent({ maxSlots: 2, retentionMs: 1000, replayTimeoutMs: 1000, logger, hasher: createBlockHasher(), outbound });
    try {
      await fn(createAgentApp(agent, () => true, statusStore(down)));
    } finally {
      agent.close();
    }
  }

  test("agent: /health stays 200 with discovery down and says so", async () => {
    await withAgentDiscoveryDown(async (a) => {
      const health = await a.fetch(new Request("http://agent/health"));
      expect(health.status).toBe(200);
      expect(((await health.json()) as { discovery: unknown }).discovery).toEqual(discoveryHealth(statusStore(down)));
    });
  });

  test("agent: /metrics carries the discovery connection", async () => {
    await withAgentDiscoveryDown(async (a) => {
      expect(await (await a.fetch(new Request("http://agent/metrics"))).text()).toContain('kvcr_discovery_connected{backend="etcd"} 0\n');
    });
  });

  test("frontend: /health stays 200 with discovery down and says so", async () => {
    const state = routingState("round-robin");
    state.putWorker(workerRecord("a"));
    const f = app(state, ndjsonWorker(), { discoveryHealth: () => discoveryHealth(statusStore(down)) });
    const health = await f.fetch(new Request("http://frontend/health"));
    expect(health.status).toBe(200);
    expect(((await health.json()) as { discovery: unknown }).discovery).toMatchObject({ backend: "etcd", connected: false });
  });
});
