// The compiled binary on a real etcd: `kvcr-mock mocker --discovery-backend etcd` registers its
// workers under kvcr/{namespace}/…, keeps serving through an etcd restart (/health and /metrics say
// so), and withdraws everything on SIGTERM. Proves the fetch-based client works without node_modules.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { eventLog } from "../../src/discovery/discovery-store.suite.ts";
import { openEtcdDiscoveryStore } from "../../src/discovery/etcd-store.ts";
import { keys } from "../../src/discovery/keys.ts";
import type { DiscoveryHealth } from "../../src/discovery/status.ts";
import { etcdAvailable, startEtcd, type EtcdServer } from "../etcd.ts";
import { runCli, spawnChild, tempDir, waitFor, withTimeout } from "../harness.ts";
import { compiledBinary } from "./compiled.ts";

const hasEtcd = etcdAvailable();
const quiet = { warn: () => {}, debug: () => {} };

describe.skipIf(!hasEtcd)("compiled binary with --discovery-backend etcd", () => {
  let dir: ReturnType<typeof tempDir>;
  let bin: string;
  let etcd: EtcdServer;

  beforeAll(async () => {
    dir = tempDir("kvcr-bin-etcd-");
    bin = await compiledBinary();
    etcd = await startEtcd();
  }, 120_000);
  afterAll(async () => {
    await etcd?.[Symbol.asyncDispose]();
    dir?.[Symbol.dispose]();
  });

  test("mocker registers in etcd, serves through an etcd restart, withdraws on SIGTERM", async () => {
    await using observer = await openEtcdDiscoveryStore({ endpoints: etcd.endpoint, logger: quiet });
    const log = eventLog();
    await using _w = await observer.watch(keys.kindPrefix("e2e", "worker"), log.listener);
    // A dead endpoint first: the binary must fail over to the live one.
    const args = ["mocker", "--num-workers", "2", "--namespace", "e2e", "--discovery-backend", "etcd", "--discovery-lease-ttl", "2", "--speedup-ratio", "0"];
    await using child = spawnChild([bin, ...args], { cwd: dir.path, stdout: "ignore", env: { ETCD_ENDPOINTS: `http://127.0.0.1:1,${etcd.endpoint}` } });
    const { proc } = child;
    let stderr = "";
    void (async () => {
      const d = new TextDecoder();
      for await (const c of proc.stderr) stderr += d.decode(c, { stream: true });
    })();
    try {
      await log.until(2, "the binary's two worker records");
      const first = log.events[0];
      const url = new URL(((first?.type === "put" ? first.entry.value : {}) as { request_url: string }).request_url).origin;
      const health = async () => (await fetch(`${url}/health`)).json() as Promise<{ status: string; discovery: DiscoveryHealth }>;
      // The dead endpoint is a member that does not answer: serving (200), but degraded, naming it.
      await waitFor(async () => (await health()).discovery.members?.every((m) => m.answering !== null), { what: "every etcd endpoint probed", timeoutMs: 10_000 });
      expect(await health()).toMatchObject({ status: "degraded", discovery: { backend: "etcd", connected: true, endpoint: etcd.endpoint, degraded: true, quorum: true } });
      expect((await health()).discovery.degradedReason).toContain("etcd member http://127.0.0.1:1 ");

      await etcd.kill();
      await waitFor(async () => (await health()).discovery.connected === false, { what: "/health to report etcd down", timeoutMs: 10_000 });
      expect((await health()).status).toBe("degraded"); // still serving with what it knows
      const gen = await fetch(`${url}/v1/generate`, { method: "POST", body: JSON.stringify({ worker: 1, token_ids: [1, 2, 3], max_tokens: 2 }) });
      expect((await gen.text()).trim().split("\n")).toHaveLength(3);
      expect(await (await fetch(`${url}/metrics`)).text()).toContain('kvcr_discovery_connected{backend="etcd"} 0\n');

      await etcd.restart();
      await waitFor(async () => (await health()).discovery.connected, { what: "/health to report etcd back", timeoutMs: 10_000 });
      expect(await (await fetch(`${url}/metrics`)).text()).toMatch(/kvcr_discovery_reconnects_total\{backend="etcd"\} [1-9]/);
      // Nothing was dropped or re-announced: the watcher saw exactly the two puts.
      expect(log.summary().map((s) => s.replace(/workers\/\S+/, "workers/*"))).toEqual(["put e2e/workers/* r1", "put e2e/workers/* r1"]);
      expect(await observer.list("e2e/")).toHaveLength(2);

      proc.kill("SIGTERM");
      expect(await withTimeout(proc.exited, 15_000, "the binary's exit after SIGTERM")).toBe(0);
      await log.until(4, "the withdrawals");
      expect(log.summary().slice(2).map((s) => s.replace(/workers\/\S+/, "workers/*"))).toEqual(["delete e2e/workers/* removed", "delete e2e/workers/* removed"]);
    } catch (err) {
      throw new Error(`${(err as Error).message}\n--- binary stderr ---\n${stderr}`, { cause: err });
    }
  }, 60_000);

  test("start-up without a usable etcd fails naming the cause (unreachable endpoint: exit 1, none given: exit 2)", async () => {
    const r = await runCli(["mocker", "--discovery-backend", "etcd", "--etcd-endpoints", "http://127.0.0.1:1"], { bin, cwd: dir.path, env: { ETCD_ENDPOINTS: "" } });
    expect(r.exitCode).toBe(1);
    expect(r.stderr).toContain("cannot reach etcd for discovery: etcd unreachable at http://127.0.0.1:1");
    const none = await runCli(["mocker", "--discovery-backend", "etcd"], { bin, cwd: dir.path, env: { ETCD_ENDPOINTS: "" } });
    expect(none.exitCode).toBe(2);
    expect(none.stderr).toContain("--etcd-endpoints (or KVCR_ETCD_ENDPOINTS, ETCD_ENDPOINTS): none given");
  });
});
