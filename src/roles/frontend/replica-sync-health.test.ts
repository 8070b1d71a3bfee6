// /health with router replica sync: degraded (200, 503 with --strict-health) while NATS is
// unreachable, healthy when connected, the sync's figures shown either way.
import { describe, expect, test } from "bun:test";
import { healthResponse } from "./health.ts";

describe("frontend /health with router replica sync", () => {
  test("NATS unreachable is degraded; connected is healthy", async () => {
    const up = healthResponse({ workerCount: 1, models: ["m"], replicaSync: { nats: "connected", replicas: 2, remote_requests: 5 }, strict: true });
    expect([up.status, await up.json()]).toEqual([200, { status: "healthy", instances: 1, ejected: 0, models: ["m"], replica_sync: { nats: "connected", replicas: 2, remote_requests: 5 } }]);
    const down = { nats: "unreachable", replicas: 0, remote_requests: 0 } as const;
    const lax = healthResponse({ workerCount: 1, models: ["m"], replicaSync: down, strict: false });
    expect([lax.status, ((await lax.json()) as { status: string }).status]).toEqual([200, "degraded"]);
    const strict = healthResponse({ workerCount: 1, models: ["m"], replicaSync: down, strict: true });
    expect(strict.status).toBe(503);
  });
});
