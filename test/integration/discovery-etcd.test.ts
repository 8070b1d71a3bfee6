// etcd backend: the shared contract suite against a real etcd (test/etcd.ts starts one per file),
// plus what only etcd has: the key layout under `kvcr/`, one lease per process, lapsed leases
// reported as expired, watches resumed across an etcd restart, compaction, and bad endpoints.
import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { spawnBun, waitFor } from "../harness.ts";
import { cutableProxy, etcdAvailable, type EtcdServer, useEtcd } from "../etcd.ts";
import { discoveryStoreSuite, eventLog } from "../../src/discovery/discovery-store.suite.ts";
import { b64, EtcdClient, prefixRangeEnd, unb64 } from "../../src/discovery/etcd-client.ts";
import { openEtcdDiscoveryStore, type EtcdDiscoveryOptions } from "../../src/discovery/etcd-store.ts";
import { keys } from "../../src/discovery/keys.ts";
import type { DiscoveryLogger, DiscoveryStore } from "../../src/discovery/store.ts";

const LEASE_TTL_MS = 1_000; // etcd's smallest lease (whole seconds)
const CHILD = join(import.meta.dir, "../fixtures/discovery-child.ts");
const quiet: DiscoveryLogger = { warn: () => {}, debug: () => {} };

describe("etcd answers that are not a lapse (a fake gateway)", () => {
  test("a keepalive answered with a stream error (timeout, leader change) keeps the lease: no re-grant, no re-put", async () => {
    let grants = 0;
    let keepalives = 0;
    const warnings: string[] = [];
    using gateway = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      async fetch(req) {
        const path = new URL(req.url).pathname;
        const header = { cluster_id: "1", revision: "5" };
        if (path === "/v3/lease/grant") return Response.json({ header, ID: String(++grants), TTL: "1" });
        if (path === "/v3/lease/keepalive") {
          keepalives++;
          return Response.json({ error: { grpc_code: 14, http_code: 503, message: "etcdserver: request timed out", http_status: "Service Unavailable" } });
        }
        return Response.json({ header });
      },
    });
    // A short request timeout: UNAVAILABLE answers are retried for at most that long per request.
    await using store = await openEtcdDiscoveryStore({ endpoints: `http://127.0.0.1:${gateway.port}`, leaseTtlMs: 1_000, requestTimeoutMs: 300, logger: { warn: (m) => void warnings.push(m), debug: () => {} } });
    await store.put(keys.worker("dynamo", "w"), 1);
    await waitFor(() => keepalives >= 4, { what: "four keep-alive attempts", timeoutMs: 10_000 });
    expect(grants).toBe(1);
    expect(warnings.filter((w) => w.includes("lapsed"))).toEqual([]);
    await expect(new EtcdClient({ endpoints: [`http://127.0.0.1:${gateway.port}`], requestTimeoutMs: 300 }).call("/v3/lease/keepalive", { ID: "1" })).rejects.toThrow(/etcd \/v3\/lease\/keepalive: etcdserver: request timed out/);
  });
});

const hasEtcd = etcdAvailable();

describe.skipIf(!hasEtcd)("etcd backend", () => {
  let etcd!: EtcdServer;
  useEtcd((s) => (etcd = s));

  let ns = 0;
  /** Each fixture gets its own key root, so suites never see each other's records. */
  const fixture = async () => {
    const root = `t${++ns}`;
    const stores: AsyncDisposable[] = [];
    return {
      leaseTtlMs: LEASE_TTL_MS,
      async open() {
        const store = await openEtcdDiscoveryStore({ endpoints: etcd.endpoint, root, leaseTtlMs: LEASE_TTL_MS, logger: quiet, watchRetryMs: 50 });
        stores.push(store);
        return store;
      },
      async [Symbol.asyncDispose]() {
        for (const s of stores) await s[Symbol.asyncDispose]();
      },
    };
  };
  discoveryStoreSuite("etcd", fixture);

  const open = (over: Partial<EtcdDiscoveryOptions> = {}) =>
    openEtcdDiscoveryStore({ endpoints: etcd.endpoint, root: `x${++ns}`, leaseTtlMs: LEASE_TTL_MS, logger: quiet, watchRetryMs: 50, ...over });
  const raw = () => new EtcdClient({ endpoints: [etcd.endpoint] });

  test("records live at kvcr/{namespace}/{kind}/{id} on one lease per process", async () => {
    await using a = await openEtcdDiscoveryStore({ endpoints: etcd.endpoint, leaseTtlMs: LEASE_TTL_MS, logger: quiet });
    await a.put(keys.worker("layout", "w/1"), { n: 1 });
    await a.put(keys.agent("layout", "g"), { n: 2 });
    const reply = await raw().call<{ kvs?: { key: string; lease?: string }[] }>("/v3/kv/range", { key: b64("kvcr/layout/"), range_end: prefixRangeEnd("kvcr/layout/") });
    const kvs = reply.kvs ?? [];
    expect(kvs.map((kv) => unb64(kv.key))).toEqual(["kvcr/layout/agents/g", "kvcr/layout/workers/w%2F1"]);
    expect(new Set(kvs.map((kv) => kv.lease)).size).toBe(1);
    expect(kvs[0]?.lease).not.toBe("0");
  });

  test("a SIGKILLed owner's records vanish when its lease lapses, reported as expired", async () => {
    await using b = await open();
    const root = `x${ns}`;
    const log = eventLog();
    await using _w = await b.watch("dynamo/", log.listener);
    const key = keys.worker("dynamo", "doomed");
    await using child = spawnBun(CHILD, [JSON.stringify({ mode: "hold", dir: "", key, leaseTtlMs: LEASE_TTL_MS, etcd: { endpoint: etcd.endpoint, root } })]);
    const ready = JSON.parse(await child.readLine((l) => l.includes('"ready"'))) as { pid: number };
    await log.until(1, "the child's record");
    expect(log.events[0]?.type === "put" && log.events[0].entry.owner.pid).toBe(ready.pid);
    child.proc.kill("SIGKILL");
    await log.until(2, "the child's lease to lapse");
    expect(log.summary()).toEqual([`put ${key} r1`, `delete ${key} expired`]);
    expect(await b.list("dynamo/")).toEqual([]);
  }, 30_000);

  test("etcd restarted: records and watches carry on, status reports the outage, nothing is dropped", async () => {
    await using a = await open({ requestTimeoutMs: 500 });
    const root = `x${ns}`;
    await using b = await open({ root, requestTimeoutMs: 500 });
    const log = eventLog();
    await using _w = await b.watch("dynamo/", log.listener);
    await a.put(keys.worker("dynamo", "w1"), 1);
    await log.until(1);
    await etcd.kill();
    await expect(b.list("dynamo/")).rejects.toThrow(/etcd unreachable/);
    expect(b.status?.().connected).toBe(false);
    await etcd.restart();
    // The watch resumes from its last revision: a change made after the restart arrives once.
    await a.put(keys.worker("dynamo", "w2"), 2);
    await log.until(2, "the put after the restart");
    await waitFor(() => b.status?.().connected, { what: "b reconnected" });
    expect(b.status?.().reconnects).toBeGreaterThanOrEqual(1);
    expect(log.summary()).toEqual(["put dynamo/workers/w1 r1", "put dynamo/workers/w2 r1"]);
    expect((await b.list("dynamo/")).map((e) => e.value)).toEqual([1, 2]);
  }, 30_000);

  test("history compacted while a watch was cut off: re-listed and diffed, no change missed or doubled", async () => {
    await using a = await open();
    const root = `x${ns}`;
    using link = cutableProxy(etcd.endpoint);
    const warnings: string[] = [];
    await using b = await open({ root, endpoints: link.endpoint, requestTimeoutMs: 500, logger: { warn: (m) => void warnings.push(m), debug: () => {} } });
    const log = eventLog();
    await using _w = await b.watch("dynamo/", log.listener);
    const gone = await a.put(keys.worker("dynamo", "gone"), 0);
    const kept = await a.put(keys.worker("dynamo", "kept"), 1);
    await a.put(keys.worker("dynamo", "same"), 1);
    await log.until(3);
    link.cut();
    await waitFor(() => b.status?.().connected === false, { what: "b to see the link down" });
    await kept.update(2);
    await gone.withdraw();
    await a.put(keys.worker("dynamo", "new"), 3);
    const { header } = await raw().call<{ header: { revision: string } }>("/v3/kv/range", { key: b64("x") });
    await raw().call("/v3/kv/compaction", { revision: header.revision });
    link.restore();
    await log.until(6, "the changes made while cut off");
    await waitFor(() => b.status?.().connected, { what: "b reconnected" });
    expect(log.summary().slice(3).sort()).toEqual(["delete dynamo/workers/gone expired", "put dynamo/workers/kept r2", "put dynamo/workers/new r1"]);
    expect(warnings.filter((w) => w.includes("compacted past"))).toHaveLength(1);
  }, 30_000);

  test("a watch cut off without compaction resumes from its revision: exact reasons, nothing doubled", async () => {
    await using a = await open();
    const root = `x${ns}`;
    using link = cutableProxy(etcd.endpoint);
    await using b = await open({ root, endpoints: link.endpoint, requestTimeoutMs: 500 });
    const log = eventLog();
    await using _w = await b.watch("dynamo/", log.listener);
    const gone = await a.put(keys.worker("dynamo", "gone"), 0);
    await log.until(1);
    link.cut();
    await waitFor(() => b.status?.().connected === false, { what: "b to see the link down" });
    await gone.withdraw();
    await a.put(keys.worker("dynamo", "new"), 3);
    link.restore();
    await log.until(3, "the changes made while cut off");
    expect(log.summary()).toEqual(["put dynamo/workers/gone r1", "delete dynamo/workers/gone removed", "put dynamo/workers/new r1"]);
  }, 30_000);

  test("a withdrawal made while etcd is unreachable is finished when it answers (removed, not kept alive)", async () => {
    await using observer = await open();
    const root = `x${ns}`;
    using link = cutableProxy(etcd.endpoint);
    await using a = await open({ root, endpoints: link.endpoint, requestTimeoutMs: 300 });
    const log = eventLog();
    await using _w = await observer.watch("dynamo/", log.listener);
    const rec = await a.put(keys.worker("dynamo", "w"), 1);
    await log.until(1);
    link.cut();
    await rec.withdraw(); // resolves: the removal waits for etcd
    expect((await observer.list("dynamo/")).length).toBe(1);
    link.restore();
    await log.until(2, "the deferred removal");
    expect(log.summary()).toEqual(["put dynamo/workers/w r1", "delete dynamo/workers/w removed"]);
  }, 30_000);

  test("unreachable or malformed endpoints are refused at open, naming them", async () => {
    await expect(openEtcdDiscoveryStore({ endpoints: "http://127.0.0.1:1", requestTimeoutMs: 500, logger: quiet })).rejects.toThrow(/cannot reach etcd for discovery: etcd unreachable at http:\/\/127.0.0.1:1/);
    await expect(openEtcdDiscoveryStore({ endpoints: "nope" })).rejects.toThrow(/"nope" is not a URL/);
    await expect(openEtcdDiscoveryStore({ endpoints: etcd.endpoint, root: "a/b" })).rejects.toThrow(/key root/);
  });

  test("several endpoints are tried in turn: a dead first one fails over to the live one", async () => {
    await using a = await open({ endpoints: ["http://127.0.0.1:1", etcd.endpoint], requestTimeoutMs: 500 });
    await a.put(keys.worker("dynamo", "w"), 1);
    expect((await a.list("dynamo/")).length).toBe(1);
    expect(a.status?.()).toMatchObject({ backend: "etcd", connected: true, endpoint: etcd.endpoint });
  });

  test("a put that finds its lease gone (lapsed under load) re-grants it and moves the older records onto the new lease", async () => {
    await using a = await open({ leaseTtlMs: 30_000 }); // no keep-alive tick during the test
    const root = `x${ns}`;
    await using b = await open({ root });
    await a.put(keys.worker("dynamo", "w1"), 1);
    const [entry] = await raw().call<{ kvs: { lease: string }[] }>("/v3/kv/range", { key: b64(`${root}/dynamo/workers/w1`) }).then((r) => r.kvs);
    await raw().call("/v3/lease/revoke", { ID: entry?.lease });
    await a.put(keys.worker("dynamo", "w2"), 2);
    await waitFor(async () => (await b.list("dynamo/")).length === 2, { what: "w1 put back on the new lease", timeoutMs: 5_000 });
    expect(a.status?.().leaseRegrants).toBe(1);
  });

  test("a lease lapsed during an outage is granted again and the records put back", async () => {
    await using a = await open();
    const root = `x${ns}`;
    await using b = await open({ root });
    await a.put(keys.worker("dynamo", "w1"), 1);
    // Revoke a's lease behind its back (as if it lapsed while etcd was away from a).
    const [entry] = await raw().call<{ kvs: { lease: string }[] }>("/v3/kv/range", { key: b64(`${root}/dynamo/workers/w1`) }).then((r) => r.kvs);
    await raw().call("/v3/lease/revoke", { ID: entry?.lease });
    await waitFor(async () => (await b.list("dynamo/")).length === 1 && (a as DiscoveryStore).status?.().leaseRegrants === 1, { what: "the re-put", timeoutMs: 5_000 });
    expect((await b.list("dynamo/"))[0]?.value).toBe(1);
  }, 30_000);
});
