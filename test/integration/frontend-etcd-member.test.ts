// A frontend and mockers on a three-member etcd cluster whose member in use hangs (SIGSTOP): the
// frontend leaves it within seconds, sees a worker that registers meanwhile, and its /health says
// "degraded" (200) naming the member until it answers again.
import { describe, expect, test } from "bun:test";
import type { DiscoveryHealth } from "../../src/discovery/status.ts";
import { startFrontend } from "../../src/roles/frontend/start.ts";
import { startMocker, type MockerHandle } from "../../src/roles/mocker/index.ts";
import { etcdAvailable } from "../etcd.ts";
import { startEtcdCluster } from "../etcd-cluster.ts";
import { waitFor, withTimeout } from "../harness.ts";
import { frontendConfig, logger } from "./frontend-kit.ts";
import { mockerConfig } from "./mocker-kit.ts";

const hasEtcd = etcdAvailable();

describe.skipIf(!hasEtcd)("frontend on an etcd cluster whose member in use hangs", () => {
  test("it moves to a live member, routes a worker registered meanwhile, and /health says degraded naming the member", async () => {
    await using cluster = await startEtcdCluster();
    const [m1, m2, m3] = cluster.members;
    const discovery = (endpoints: string[]) => ["--discovery-backend", "etcd", "--etcd-endpoints", endpoints.join(","), "--namespace", "fe-etcd", "--discovery-lease-ttl", "6", "--etcd-member-timeout", "2"];
    const mockers: MockerHandle[] = [];
    await using _mockers = { [Symbol.asyncDispose]: async () => void (await Promise.all(mockers.map((m) => m.close()))) };
    const startOne = async (endpoints: string[]) => {
      const m = await startMocker(mockerConfig(["--speedup-ratio", "0", ...discovery(endpoints)]), { logger, env: {} });
      mockers.push(m);
      await withTimeout(m.ready, 15_000, "mocker registration");
    };
    await startOne(cluster.endpoints.slice());
    const fe = await startFrontend(frontendConfig(["--http-port", "0", ...discovery(cluster.endpoints.slice())]), { logger });
    await using _fe = { [Symbol.asyncDispose]: () => fe.close() };
    const health = async () => {
      const res = await fetch(`${fe.url}/health`);
      return { code: res.status, ...((await res.json()) as { status: string; discovery: DiscoveryHealth }) };
    };
    await waitFor(async () => fe.state.workerCount === 1 && (await health()).status === "healthy", { what: "the frontend healthy with one worker", timeoutMs: 15_000 });
    expect((await health()).discovery.endpoint).toBe(m1!.endpoint);

    m1!.pause();
    const pausedAt = performance.now();
    // A worker that registers while the frontend's member hangs (through the live members).
    await startOne([m2!.endpoint, m3!.endpoint]);
    await waitFor(() => fe.state.workerCount === 2, { what: "the frontend to route the worker registered during the hang", timeoutMs: 15_000 });
    console.log(`frontend, hung etcd member: worker registered during the hang routed after ${(performance.now() - pausedAt).toFixed(0)} ms`);
    // Had the hung member led, the other two elect a leader meanwhile (quorum lost until they have).
    await waitFor(async () => (await health()).discovery.quorum === true, { what: "the two live members to have a leader", timeoutMs: 15_000 });
    const h = await health();
    expect(h.code).toBe(200);
    expect(h.status).toBe("degraded");
    expect(h.discovery).toMatchObject({ connected: true, degraded: true, quorum: true });
    expect(h.discovery.endpoint).not.toBe(m1!.endpoint);
    expect(h.discovery.degradedReason).toContain(`etcd member ${m1!.endpoint}`);
    expect(h.discovery.members?.find((m) => m.endpoint === m1!.endpoint)?.answering).toBe(false);

    m1!.resume();
    // (A resumed old leader of etcd 3.4 before its late-2023 fix revokes the leases it saw lapse
    // while stopped; the mockers put their records back.)
    await waitFor(async () => (await health()).status === "healthy" && fe.state.workerCount === 2, { what: "the frontend healthy with both workers once the member answers again", timeoutMs: 15_000 });
  }, 90_000);
});
