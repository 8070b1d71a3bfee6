// etcd losing its history under running processes: wiped and started empty on the same port,
// restored from an older backup, compacted past a cut-off watcher, or shown gone by a plain list.
// Owners put their records back, watchers list again and end with exactly etcd's state, and both
// are counted on /metrics. Its own etcd: wiping it would break other files' tests.
import { describe, expect, test } from "bun:test";
import { waitFor } from "../harness.ts";
import { cutableProxy, etcdAvailable, type EtcdServer, useEtcd } from "../etcd.ts";
import { believed, eventLog, warningLog } from "../../src/discovery/discovery-store.suite.ts";
import { b64, EtcdClient } from "../../src/discovery/etcd-client.ts";
import { openEtcdDiscoveryStore, type EtcdDiscoveryOptions } from "../../src/discovery/etcd-store.ts";
import { keys } from "../../src/discovery/keys.ts";
import { discoveryMetricFamilies } from "../../src/discovery/status.ts";
import type { DiscoveryEntry, DiscoveryLogger, DiscoveryStore } from "../../src/discovery/store.ts";
import { renderMetrics } from "../../src/protocol/prometheus.ts";

const LEASE_TTL_MS = 1_000;


function asState(entries: readonly DiscoveryEntry[]): Record<string, string> {
  return Object.fromEntries(entries.map((e) => [e.key, `r${e.revision}=${JSON.stringify(e.value)}`]));
}

/** Waits until the watch's consumer believes exactly `want`, and etcd holds exactly that too. */
async function settlesOn(store: DiscoveryStore, log: ReturnType<typeof eventLog>, want: Record<string, string>, what: string): Promise<void> {
  await waitFor(async () => Bun.deepEquals(believed(log), want) && Bun.deepEquals(asState(await store.list("dynamo/")), want), { what, timeoutMs: 10_000 });
}

/** Raises etcd's revision (and the watchers') well past where an emptied etcd starts again. */
async function churn(store: DiscoveryStore, times = 30): Promise<void> {
  const busy = await store.put(keys.worker("dynamo", "busy"), 0);
  for (let i = 1; i <= times; i++) await busy.update(i);
  await busy.withdraw();
}

const hasEtcd = etcdAvailable();

describe.skipIf(!hasEtcd)("etcd losing its history", () => {
  let etcd!: EtcdServer;
  useEtcd((s) => (etcd = s));

  let ns = 0;
  const open = (over: Partial<EtcdDiscoveryOptions> = {}) =>
    openEtcdDiscoveryStore({ endpoints: etcd.endpoint, root: `h${++ns}`, leaseTtlMs: LEASE_TTL_MS, logger: warningLog().logger, watchRetryMs: 50, requestTimeoutMs: 500, ...over });

  test("etcd wiped and started empty on the same port: the owner's records come back on a new lease, a watcher sees what is put after", async () => {
    const owner = warningLog();
    const watcher = warningLog();
    await using a = await open({ logger: owner.logger });
    const root = `h${ns}`;
    await using b = await open({ root, logger: watcher.logger });
    const log = eventLog();
    await using _w = await b.watch("dynamo/", log.listener);
    await a.put(keys.worker("dynamo", "w1"), 1);
    await churn(a);
    await settlesOn(b, log, { "dynamo/workers/w1": "r1=1" }, "the watcher to follow the churn");

    await etcd.wipe();
    // Another process, started after the wipe, registers: the old watcher must see it although
    // etcd's revisions count from 1 again (below what that watcher had seen).
    await using c = await open({ root });
    await c.put(keys.worker("dynamo", "w2"), 2);
    await settlesOn(b, log, { "dynamo/workers/w1": "r1=1", "dynamo/workers/w2": "r1=2" }, "w1 put back by its owner and w2 seen by the old watcher");

    expect(a.status?.().leaseRegrants).toBeGreaterThanOrEqual(1);
    expect(owner.warnings.some((w) => /lease \d+ is gone/.test(w))).toBe(true);
    expect(b.status?.().watchResyncs).toBeGreaterThanOrEqual(1);
    expect(watcher.warnings.some((w) => w.includes("revision went back"))).toBe(true);
    expect(renderMetrics(discoveryMetricFamilies(b))).toMatch(/kvcr_discovery_watch_resyncs_total\{backend="etcd"\} [1-9]/);
    // And the watch follows etcd from its new revision on.
    await c.put(keys.worker("dynamo", "w3"), 3);
    await settlesOn(b, log, { "dynamo/workers/w1": "r1=1", "dynamo/workers/w2": "r1=2", "dynamo/workers/w3": "r1=3" }, "a put after the re-list");
  }, 40_000);

  test("etcd restored from an older backup that still holds the owner's lease: the records are put back as they are now", async () => {
    const owner = warningLog();
    await using a = await open({ logger: owner.logger, leaseTtlMs: 3_000 }); // outlives the restarts
    const root = `h${ns}`;
    await using b = await open({ root });
    const log = eventLog();
    await using _w = await b.watch("dynamo/", log.listener);
    const w1 = await a.put(keys.worker("dynamo", "w1"), 1);
    await etcd.backup();
    await w1.update(2);
    await a.put(keys.worker("dynamo", "w2"), 2);
    await churn(a);
    await settlesOn(b, log, { "dynamo/workers/w1": "r2=2", "dynamo/workers/w2": "r1=2" }, "the watcher to see the changes after the backup");

    await etcd.restoreBackup(); // w1 at its first version, no w2, a's lease known
    await waitFor(() => (b.status?.().watchResyncs ?? 0) >= 1, { what: "the watcher to list again", timeoutMs: 10_000 });
    await settlesOn(b, log, { "dynamo/workers/w1": "r2=2", "dynamo/workers/w2": "r1=2" }, "a's records put back as they are now");
    expect(owner.warnings.some((w) => w.includes("still has lease"))).toBe(true);
  }, 40_000);

  test("history compacted while a watch was cut off: re-listed to etcd's state, counted", async () => {
    await using a = await open();
    const root = `h${ns}`;
    using link = cutableProxy(etcd.endpoint);
    const watcher = warningLog();
    await using b = await open({ root, endpoints: link.endpoint, logger: watcher.logger });
    const log = eventLog();
    await using _w = await b.watch("dynamo/", log.listener);
    const gone = await a.put(keys.worker("dynamo", "gone"), 0);
    const kept = await a.put(keys.worker("dynamo", "kept"), 1);
    await settlesOn(b, log, { "dynamo/workers/gone": "r1=0", "dynamo/workers/kept": "r1=1" }, "the first records");
    expect(b.status?.().watchResyncs).toBe(0);
    link.cut();
    await waitFor(() => b.status?.().connected === false, { what: "b to see the link down" });
    await kept.update(2);
    await gone.withdraw();
    await a.put(keys.worker("dynamo", "new"), 3);
    const raw = new EtcdClient({ endpoints: [etcd.endpoint] });
    const { header } = await raw.call<{ header: { revision: string } }>("/v3/kv/range", { key: b64("x") });
    await raw.call("/v3/kv/compaction", { revision: header.revision });
    link.restore();
    await settlesOn(b, log, { "dynamo/workers/kept": "r2=2", "dynamo/workers/new": "r1=3" }, "the re-list after the compaction");
    expect(b.status?.().watchResyncs).toBe(1);
    expect(renderMetrics(discoveryMetricFamilies(b))).toContain('kvcr_discovery_watch_resyncs_total{backend="etcd"} 1\n');
    expect(watcher.warnings.filter((w) => w.includes("compacted past"))).toHaveLength(1);
  }, 30_000);
});

describe("a list that shows etcd went back (a fake gateway)", () => {
  test("every watch of the store lists again, though its own stream shows nothing", async () => {
    // etcd as seen before and after a wipe: the range answers a lower revision and other records;
    // the watch stream says nothing after `created` (as a watch waiting for a revision not reached).
    let revision = 40;
    let kvs = [{ key: "w1", lease: "7" }];
    const value = (key: string) => b64(JSON.stringify({ format: "kvcr-discovery-etcd/v1", owner: { pid: 1, instanceId: "feed" }, revision: 1, leaseTtlMs: 1000, value: key }));
    const header = () => ({ cluster_id: "1", revision: String(revision) });
    using gateway = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      async fetch(req) {
        const path = new URL(req.url).pathname;
        if (path === "/v3/kv/range") {
          return Response.json({ header: header(), kvs: kvs.map((kv) => ({ key: b64(`kvcr/dynamo/workers/${kv.key}`), value: value(kv.key), lease: kv.lease, mod_revision: String(revision) })) });
        }
        if (path === "/v3/watch") {
          const created = `${JSON.stringify({ result: { header: header(), created: true } })}\n`;
          return new Response(new ReadableStream({ start: (c) => c.enqueue(new TextEncoder().encode(created)) }));
        }
        if (path === "/v3/lease/timetolive") return Response.json({ header: header(), TTL: "1" });
        return Response.json({ header: header() });
      },
    });
    const watcher = warningLog();
    await using store = await openEtcdDiscoveryStore({ endpoints: `http://127.0.0.1:${gateway.port}`, leaseTtlMs: 1_000, logger: watcher.logger, watchRetryMs: 50 });
    const log = eventLog();
    await using _w = await store.watch("dynamo/", log.listener);
    expect(log.summary()).toEqual(["put dynamo/workers/w1 r1"]);

    [revision, kvs] = [3, [{ key: "w2", lease: "9" }]];
    expect((await store.list("dynamo/")).map((e) => e.key)).toEqual(["dynamo/workers/w2"]);
    await waitFor(() => log.events.length === 3, { what: "the watch to list again" });
    expect(log.summary()).toEqual(["put dynamo/workers/w1 r1", "delete dynamo/workers/w1 expired", "put dynamo/workers/w2 r1"]);
    expect(store.status().watchResyncs).toBe(1);
    expect(watcher.warnings.some((w) => w.includes("etcd revision went back from 40 to 3"))).toBe(true);
  });
});
