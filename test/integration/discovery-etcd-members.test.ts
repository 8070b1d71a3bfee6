// etcd members that hang (SIGSTOP: sockets open, nothing answered) under running stores, on a real
// three-member cluster: the store leaves a silent member for a live one, lists again and keeps its
// lease through it; /health's discovery object says degraded, names the member and reports a lost
// quorum; and late events (a fake gateway replaying them) never eject a record put again since.
import { describe, expect, test } from "bun:test";
import { waitFor, withTimeout } from "../harness.ts";
import { etcdAvailable } from "../etcd.ts";
import { startEtcdCluster } from "../etcd-cluster.ts";
import { believed, eventLog, warningLog } from "../../src/discovery/discovery-store.suite.ts";
import { b64, EtcdClient } from "../../src/discovery/etcd-client.ts";
import { openEtcdDiscoveryStore, type EtcdDiscoveryOptions, type EtcdDiscoveryStore } from "../../src/discovery/etcd-store.ts";
import { keys } from "../../src/discovery/keys.ts";
import { discoveryHealth, discoveryMetricFamilies } from "../../src/discovery/status.ts";
import { renderMetrics } from "../../src/protocol/prometheus.ts";

/** Short enough for a test, long enough that a loaded machine does not look like a hang. */
const MEMBER_TIMEOUT_MS = 2_000;
/** Renewed every 2 s: etcd's remaining TTL (whole seconds) visibly goes up at each renewal. */
const LEASE_TTL_MS = 6_000;

const hasEtcd = etcdAvailable();

/** Every member answers with a leader, as the store sees them. */
const allAnswering = (store: EtcdDiscoveryStore) => {
  const h = discoveryHealth(store);
  return h.quorum === true && !h.degraded && (h.members ?? []).every((m) => m.answering === true && m.leader === true);
};

describe.skipIf(!hasEtcd)("etcd members that hang (a three-member cluster)", () => {
  let ns = 0;
  const open = (endpoints: readonly string[], over: Partial<EtcdDiscoveryOptions> = {}) =>
    openEtcdDiscoveryStore({ endpoints, root: `m${ns}`, leaseTtlMs: LEASE_TTL_MS, memberTimeoutMs: MEMBER_TIMEOUT_MS, watchRetryMs: 50, requestTimeoutMs: 5_000, logger: warningLog().logger, ...over });

  test("a member hung under a watch is left within seconds: the watch lists again on a live member, sees what changed, the lease lives on", async () => {
    ns++;
    await using cluster = await startEtcdCluster();
    const [m1, m2, m3] = cluster.members;
    const watcher = warningLog();
    await using w = await open(cluster.endpoints, { logger: watcher.logger });
    await using p = await open([m2!.endpoint, m3!.endpoint]);
    // Rides m1 alone: nowhere to go, so it must say it is not connected.
    await using lone = await open([m1!.endpoint]);
    const own = await w.put(keys.worker("dynamo", "watcher"), "mine");
    const gone = await p.put(keys.worker("dynamo", "gone"), "soon withdrawn");
    const log = eventLog();
    await using _watch = await w.watch("dynamo/", log.listener);
    await waitFor(() => allAnswering(w) && allAnswering(p), { what: "every member probed and answering", timeoutMs: 10_000 });
    expect(w.status().endpoint).toBe(m1!.endpoint);

    m1!.pause();
    const pausedAt = performance.now();
    const moved = waitFor(() => w.status().endpoint !== m1!.endpoint, { what: "the store to leave the hung member", timeoutMs: 15_000 }).then(() => performance.now() - pausedAt);
    // Changed while the watch's member is hung: the move must not miss them. (Had the hung member
    // led, these wait for the other two to elect a leader.)
    await gone.withdraw();
    await p.put(keys.worker("dynamo", "late"), "put through another member");
    const movedMs = await moved;
    await waitFor(() => Bun.deepEquals(believed(log), { "dynamo/workers/watcher": 'r1="mine"', "dynamo/workers/late": 'r1="put through another member"' }), { what: "the watch to show what changed during the hang", timeoutMs: 10_000 });
    const seenMs = performance.now() - pausedAt;
    console.log(`hung etcd member: left after ${movedMs.toFixed(0)} ms, changes made meanwhile seen after ${seenMs.toFixed(0)} ms (member timeout ${MEMBER_TIMEOUT_MS} ms)`);

    // Had the hung member led, the other two elect a leader meanwhile (quorum lost until they have).
    await waitFor(() => discoveryHealth(w).quorum === true, { what: "the two live members to have a leader", timeoutMs: 15_000 });
    const health = discoveryHealth(w);
    expect(health).toMatchObject({ connected: true, degraded: true, quorum: true });
    expect(health.degradedReason).toContain(`etcd member ${m1!.endpoint}`);
    expect(health.members?.find((m) => m.endpoint === m1!.endpoint)).toMatchObject({ answering: false });
    expect([m2!.endpoint, m3!.endpoint]).toContain(health.endpoint!);
    expect(watcher.warnings.some((m) => m.includes(`etcd member ${m1!.endpoint} does not answer`) && m.includes(`moving to`))).toBe(true);
    expect(renderMetrics(discoveryMetricFamilies(w))).toContain('kvcr_discovery_member_failovers_total{backend="etcd"} 1\n');

    // The store that has only the hung member cannot move: it says so.
    await waitFor(() => discoveryHealth(lone).connected === false, { what: "the lone store to report its member silent", timeoutMs: 10_000 });
    expect(discoveryHealth(lone)).toMatchObject({ connected: false, degraded: true, endpoint: m1!.endpoint });

    // The watcher's lease is renewed through a live member: etcd's remaining TTL goes up again.
    const leaseOf = async () => {
      const reply = await p.client.call<{ kvs?: { lease?: string }[] }>("/v3/kv/range", { key: b64(`m${ns}/${own.key}`) });
      return reply.kvs?.[0]?.lease;
    };
    const lease = await leaseOf();
    expect(lease).toBeDefined();
    let lastTtl = Number.POSITIVE_INFINITY;
    await waitFor(
      async () => {
        const ttl = Number((await p.client.call<{ TTL?: string }>("/v3/lease/timetolive", { ID: lease })).TTL ?? -1);
        const renewed = ttl > lastTtl;
        lastTtl = ttl;
        return renewed;
      },
      { what: "a renewal of the watcher's lease after the move", timeoutMs: 10_000, intervalMs: 100 },
    );
    expect(await leaseOf()).toBe(lease);
    expect(w.status().leaseRegrants).toBe(0);

    m1!.resume();
    await waitFor(() => allAnswering(w), { what: "the resumed member to answer again", timeoutMs: 15_000 });
    await waitFor(() => discoveryHealth(lone).connected && !discoveryHealth(lone).degraded, { what: "the lone store to be connected again", timeoutMs: 15_000 });
    // The watcher ends with exactly etcd's records. (A resumed old leader of etcd 3.4 before its
    // late-2023 fix revokes the leases it saw lapse while stopped; their owners put them back.)
    await p.put(keys.worker("dynamo", "after"), 1);
    const want = { "dynamo/workers/after": "r1=1", "dynamo/workers/late": 'r1="put through another member"', "dynamo/workers/watcher": 'r1="mine"' };
    await waitFor(async () => Bun.deepEquals(believed(log), want) && (await p.list("dynamo/")).length === 3, { what: "the watcher to settle on etcd's records after the resume", timeoutMs: 15_000 });
  }, 90_000);

  test("the leader hung longer than the lease TTL, then resumed: no live record is reported gone (a revoke as it resumes is put back first)", async () => {
    ns++;
    await using cluster = await startEtcdCluster();
    // The leader, by its members' status: where the old-leader revoke can come from.
    const statuses = await Promise.all(cluster.endpoints.map(async (e) => (await (await fetch(`${e}/v3/maintenance/status`, { method: "POST", body: "{}" })).json()) as { leader?: string; header?: { member_id?: string } }));
    const leaderAt = statuses.findIndex((st) => st.header?.member_id === st.leader);
    expect(leaderAt).toBeGreaterThanOrEqual(0);
    const leader = cluster.members[leaderAt]!;
    const followers = cluster.endpoints.filter((_, i) => i !== leaderAt);
    const ownerLog = warningLog();
    const watcherLog = warningLog();
    // Both use a follower, so neither has to move: only the resume matters here.
    const ttlMs = 3_000;
    await using owner = await open([...followers, leader.endpoint], { logger: ownerLog.logger, leaseTtlMs: ttlMs });
    await using watcher = await open([...followers, leader.endpoint], { logger: watcherLog.logger });
    await owner.put(keys.worker("dynamo", "live"), "kept alive throughout");
    const leaseOfLive = async () => (await owner.client.call<{ kvs?: { lease?: string }[] }>("/v3/kv/range", { key: b64(`m${ns}/dynamo/workers/live`) })).kvs?.[0]?.lease;
    const firstLease = await leaseOfLive();
    const log = eventLog();
    await using _watch = await watcher.watch("dynamo/", log.listener);
    await waitFor(() => allAnswering(owner) && allAnswering(watcher), { what: "every member probed and answering", timeoutMs: 10_000 });

    leader.pause();
    const pausedAt = performance.now();
    await waitFor(() => discoveryHealth(watcher).members?.find((x) => x.endpoint === leader.endpoint)?.answering === false, { what: "the hung leader reported silent", timeoutMs: 10_000 });
    // The hang must outlast the lease TTL: the old leader's lessor then sees the lease lapsed.
    await waitFor(() => performance.now() - pausedAt > ttlMs + 1_000, { what: "the hang to outlast the lease TTL", timeoutMs: ttlMs + 5_000, intervalMs: 100 });
    leader.resume();
    const resumedAt = performance.now();
    // The revoke, when this etcd has the flaw, comes within a second of the resume; the owner
    // then grants a new lease and puts the record back.
    await waitFor(() => owner.status().leaseRegrants >= 1 || performance.now() - resumedAt > 8_000, { what: "the owner's re-grant, or the resume window to pass", timeoutMs: 15_000, intervalMs: 100 });
    await waitFor(() => allAnswering(watcher), { what: "the resumed member to answer", timeoutMs: 10_000 });
    const revoked = owner.status().leaseRegrants >= 1;
    console.log(`leader hung ${((resumedAt - pausedAt) / 1000).toFixed(1)} s and resumed: the lease ${revoked ? "was revoked by the old leader and granted again" : "was not revoked (etcd has the fix, or the race did not happen)"}`);
    // Once the record is back on a new lease, a marker put after it: seen by the watcher, every
    // earlier change (the revoke, the re-put) has been too (etcd delivers in revision order).
    if (revoked) await waitFor(async () => ((l) => l !== undefined && l !== firstLease)(await leaseOfLive()), { what: "the record back on the new lease", timeoutMs: 10_000 });
    await owner.put(keys.worker("dynamo", "marker"), 0);
    await waitFor(() => believed(log)["dynamo/workers/marker"] !== undefined, { what: "the watcher to see the marker", timeoutMs: 10_000 });
    expect(log.summary()).toEqual(["put dynamo/workers/live r1", "put dynamo/workers/marker r1"]);
    if (revoked) expect(watcherLog.warnings.some((m) => m.includes("dynamo/workers/live lapsed and was put back unchanged"))).toBe(true);
  }, 90_000);

  test("two of three members hung: the store reports quorum lost, then back", async () => {
    ns++;
    await using cluster = await startEtcdCluster();
    const [m1, m2, m3] = cluster.members;
    const watcher = warningLog();
    await using w = await open(cluster.endpoints, { logger: watcher.logger });
    await using _watch = await w.watch("dynamo/", eventLog().listener);
    await waitFor(() => allAnswering(w), { what: "every member probed and answering", timeoutMs: 10_000 });

    m2!.pause();
    m3!.pause();
    const pausedAt = performance.now();
    await waitFor(() => discoveryHealth(w).quorum === false, { what: "quorum loss to be reported", timeoutMs: 15_000 });
    const lostMs = performance.now() - pausedAt;
    const silentTwo = () => discoveryHealth(w).members?.filter((m) => m.answering === false).map((m) => m.endpoint).sort();
    await waitFor(() => Bun.deepEquals(silentTwo(), [m2!.endpoint, m3!.endpoint].sort()), { what: "both hung members reported silent", timeoutMs: 15_000 });
    console.log(`etcd quorum loss (2 of 3 members hung): reported after ${lostMs.toFixed(0)} ms, both members silent after ${(performance.now() - pausedAt).toFixed(0)} ms`);
    const health = discoveryHealth(w);
    expect(health.degraded).toBe(true);
    expect(health.degradedReason).toContain("etcd quorum lost");
    expect(renderMetrics(discoveryMetricFamilies(w))).toContain('kvcr_discovery_quorum{backend="etcd"} 0\n');
    // m1 still answers (without a leader, once its election timeout passed): it stays in use.
    expect(health.endpoint).toBe(m1!.endpoint);

    m2!.resume();
    m3!.resume();
    await waitFor(() => allAnswering(w), { what: "quorum to come back", timeoutMs: 20_000 });
    expect(watcher.warnings.some((m) => m.includes("etcd quorum is back"))).toBe(true);
  }, 90_000);
});

describe("late etcd events (a fake gateway replaying them)", () => {
  test("a delete older than the record held, and an older put, are ignored and counted; later changes apply", async () => {
    const owner = { pid: 1, instanceId: "feed" };
    const value = (revision: number, v: string, withdrawn = false) => b64(JSON.stringify({ format: "kvcr-discovery-etcd/v1", owner, revision, leaseTtlMs: 1000, ...(withdrawn ? { withdrawn } : {}), value: v }));
    const key = (id: string) => b64(`kvcr/dynamo/workers/${id}`);
    const header = (revision: number) => ({ cluster_id: "1", revision: String(revision) });
    // Listed at revision 10: w1 as put again at 10. Then the stream brings the delete of its
    // previous registration (revision 7) and that registration's put (8), both late, then news.
    const results = [
      { header: header(10), created: true },
      { header: header(10), events: [{ type: "DELETE", kv: { key: key("w1"), mod_revision: "7" } }] },
      { header: header(10), events: [{ kv: { key: key("w1"), value: value(1, "old"), mod_revision: "8" } }] },
      { header: header(11), events: [{ kv: { key: key("w2"), value: value(1, "w2"), mod_revision: "11" } }] },
      { header: header(13), events: [{ kv: { key: key("w1"), value: value(2, "new", true), mod_revision: "12" } }, { type: "DELETE", kv: { key: key("w1"), mod_revision: "13" }, prev_kv: { key: key("w1"), value: value(2, "new", true), mod_revision: "12" } }] },
    ];
    let watches = 0;
    using gateway = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch(req) {
        const path = new URL(req.url).pathname;
        if (path === "/v3/kv/range") return Response.json({ header: header(10), kvs: [{ key: key("w1"), value: value(2, "new"), mod_revision: "10", lease: "5" }] });
        if (path === "/v3/maintenance/status") return Response.json({ header: header(10), leader: "1" });
        if (path === "/v3/watch") {
          watches++;
          const body = results.map((r) => `${JSON.stringify({ result: r })}\n`).join("");
          // Kept open, as etcd keeps a watch open.
          return new Response(new ReadableStream({ start: (c) => c.enqueue(new TextEncoder().encode(body)) }));
        }
        return Response.json({ header: header(10) });
      },
    });
    const watcher = warningLog();
    await using store = await openEtcdDiscoveryStore({ endpoints: `http://127.0.0.1:${gateway.port}`, leaseTtlMs: 1_000, logger: watcher.logger, watchRetryMs: 50 });
    const log = eventLog();
    await using _w = await store.watch("dynamo/", log.listener);
    await waitFor(() => log.events.length >= 3, { what: "the news after the late events" });
    expect(log.summary()).toEqual(["put dynamo/workers/w1 r2", "put dynamo/workers/w2 r1", "delete dynamo/workers/w1 removed"]);
    expect(watches).toBe(1);
    expect(store.status().staleEventsIgnored).toBe(2);
    expect(watcher.warnings.filter((m) => m.startsWith("discovery: ignoring a late"))).toEqual([
      'discovery: ignoring a late delete of dynamo/workers/w1 at etcd revision 7 under watch "dynamo/": what is held is from revision 10, newer',
      'discovery: ignoring a late put of dynamo/workers/w1 at etcd revision 8 under watch "dynamo/": what is held is from revision 10, newer',
    ]);
    expect(renderMetrics(discoveryMetricFamilies(store))).toContain('kvcr_discovery_stale_events_ignored_total{backend="etcd"} 2\n');
  });

  test("a request under way on a member that is left goes on with the next one; a silent member is tried last", async () => {
    let hungRequests = 0;
    // Takes the request and never answers, as a SIGSTOPped member.
    using hung = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch: () => {
        hungRequests++;
        return new Promise<Response>(() => {});
      },
    });
    using live = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => Response.json({ header: { cluster_id: "1", revision: "3" }, count: "0" }) });
    const [hungUrl, liveUrl] = [`http://127.0.0.1:${hung.port}`, `http://127.0.0.1:${live.port}`];
    const client = new EtcdClient({ endpoints: [hungUrl, liveUrl], requestTimeoutMs: 60_000 });
    const pending = client.call<{ count?: string }>("/v3/kv/range", { key: "AA==" });
    await waitFor(() => hungRequests === 1, { what: "the request to reach the hung member" });
    client.setAnswering(0, false);
    client.switchTo(1);
    expect(await withTimeout(pending, 5_000, "the request to finish on the live member")).toMatchObject({ count: "0" });
    expect([client.inUse, client.status.endpoint]).toEqual([1, liveUrl]);
    await client.call("/v3/kv/range", { key: "AA==" });
    expect(hungRequests).toBe(1);
  });

  test("an UNAVAILABLE answer (no leader, leader changed) moves to the next member, and is retried while an election may last", async () => {
    const unavailable = (message: string) => Response.json({ error: message, code: 14, message }, { status: 503 });
    const ok = () => Response.json({ header: { cluster_id: "1", revision: "3" }, count: "0" });
    let leaderless = 0;
    using noLeader = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => (leaderless++, unavailable("etcdserver: no leader")) });
    using live = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: ok });
    const client = new EtcdClient({ endpoints: [`http://127.0.0.1:${noLeader.port}`, `http://127.0.0.1:${live.port}`] });
    expect(await client.call("/v3/kv/range", { key: "AA==" })).toMatchObject({ count: "0" });
    expect([leaderless, client.inUse]).toEqual([1, 1]);

    let electing = 3; // answers "leader changed" three times, then serves
    using alone = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => (electing-- > 0 ? unavailable("etcdserver: leader changed") : ok()) });
    expect(await new EtcdClient({ endpoints: [`http://127.0.0.1:${alone.port}`] }).call("/v3/kv/range", { key: "AA==" })).toMatchObject({ count: "0" });
    // Past the retry window the caller gets etcd's answer; other errors come at once.
    await expect(new EtcdClient({ endpoints: [`http://127.0.0.1:${noLeader.port}`], requestTimeoutMs: 300 }).call("/v3/kv/range", {})).rejects.toThrow(/etcdserver: no leader/);
    let asked = 0;
    using notFound = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => (asked++, Response.json({ error: "etcdserver: requested lease not found", code: 5, message: "etcdserver: requested lease not found" }, { status: 404 })) });
    await expect(new EtcdClient({ endpoints: [`http://127.0.0.1:${notFound.port}`] }).call("/v3/lease/keepalive", { ID: "1" })).rejects.toThrow(/lease not found/);
    expect(asked).toBe(1);
  });
});

/**
 * A fake etcd gateway: w1 and w2 listed at revision 10, a watch stream the test feeds with
 * `send`, keep-alives counted, and a status probe that can be made to hang (`silent`).
 */
function fakeGateway() {
  const owner = { pid: 1, instanceId: "feed" };
  const envelope = (v: string) => b64(JSON.stringify({ format: "kvcr-discovery-etcd/v1", owner, revision: 1, leaseTtlMs: 1000, value: v }));
  const key = (id: string) => b64(`kvcr/dynamo/workers/${id}`);
  const header = (revision: number) => ({ cluster_id: "1", revision: String(revision) });
  const streams: ReadableStreamDefaultController<Uint8Array>[] = [];
  const state = { keepalives: 0, silent: false };
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch(req) {
      const path = new URL(req.url).pathname;
      if (path === "/v3/kv/range") return Response.json({ header: header(10), kvs: ["w1", "w2"].map((id) => ({ key: key(id), value: envelope(id), mod_revision: "10", lease: "5" })) });
      if (path === "/v3/maintenance/status") return state.silent ? new Promise<Response>(() => {}) : Response.json({ header: header(10), leader: "1" });
      if (path === "/v3/lease/grant") return Response.json({ header: header(10), ID: "7", TTL: "9" });
      if (path === "/v3/lease/keepalive") {
        state.keepalives++;
        return Response.json({ result: { header: header(10), ID: "7", TTL: "9" } });
      }
      if (path === "/v3/watch") {
        const start = (c: ReadableStreamDefaultController<Uint8Array>) => {
          streams.push(c);
          c.enqueue(new TextEncoder().encode(`${JSON.stringify({ result: { header: header(10), created: true } })}\n`));
        };
        return new Response(new ReadableStream<Uint8Array>({ start }));
      }
      return Response.json({ header: header(10) });
    },
  });
  return {
    url: `http://127.0.0.1:${server.port}`,
    state,
    /** Watch streams opened so far. */
    watching: () => streams.length,
    /** A lease expiry of `id` at `revision` (no withdrawal mark before it). */
    expire: (id: string, revision: number) => ({ header: header(revision), events: [{ type: "DELETE", kv: { key: key(id), mod_revision: String(revision) }, prev_kv: { key: key(id), value: envelope(id), mod_revision: "10" } }] }),
    /** `id` put again as it was (its owner's re-put on a new lease). */
    putBack: (id: string, revision: number) => ({ header: header(revision), events: [{ kv: { key: key(id), value: envelope(id), mod_revision: String(revision), lease: "8" } }] }),
    send(...results: unknown[]) {
      for (const c of streams) c.enqueue(new TextEncoder().encode(results.map((r) => `${JSON.stringify({ result: r })}\n`).join("")));
    },
    [Symbol.dispose]: () => server.stop(true),
  };
}

/** A loopback port nothing listens on: a member that is down. */
function deadEndpoint(): string {
  const l = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const port = l.port;
  l.stop(true);
  return `http://127.0.0.1:${port}`;
}

describe("lease expiries while an etcd member is silent or just resumed (a fake gateway)", () => {
  test("an expiry is held back: a record put back unchanged within the hold is never reported gone; one not put back is, after it", async () => {
    using gw = fakeGateway();
    const dead = deadEndpoint();
    const warnings = warningLog();
    await using store = await openEtcdDiscoveryStore({ endpoints: [gw.url, dead], leaseTtlMs: 1_000, memberTimeoutMs: 300, logger: warnings.logger, watchRetryMs: 50 });
    const log = eventLog();
    await using _w = await store.watch("dynamo/", log.listener);
    await waitFor(() => discoveryHealth(store).members?.[1]?.answering === false && gw.watching() > 0, { what: "the dead member reported silent and the watch open" });
    gw.send(gw.expire("w1", 11), gw.expire("w2", 12), gw.putBack("w1", 13));
    await waitFor(() => log.events.length >= 3, { what: "w2's expiry, after the hold", timeoutMs: 10_000 });
    expect(log.summary()).toEqual(["put dynamo/workers/w1 r1", "put dynamo/workers/w2 r1", "delete dynamo/workers/w2 expired"]);
    expect(warnings.warnings.some((m) => m.startsWith("discovery: dynamo/workers/w1 lapsed and was put back unchanged"))).toBe(true);
  });

  test("with every member answering, an expiry is reported at once", async () => {
    using gw = fakeGateway();
    await using store = await openEtcdDiscoveryStore({ endpoints: [gw.url], leaseTtlMs: 1_000, memberTimeoutMs: 300, logger: warningLog().logger, watchRetryMs: 50 });
    const log = eventLog();
    await using _w = await store.watch("dynamo/", log.listener);
    await waitFor(() => discoveryHealth(store).members?.[0]?.answering === true && gw.watching() > 0, { what: "the member probed and the watch open" });
    gw.send(gw.expire("w1", 11), gw.putBack("w1", 12));
    await waitFor(() => log.events.length >= 4, { what: "the expiry and the put" });
    expect(log.summary()).toEqual(["put dynamo/workers/w1 r1", "put dynamo/workers/w2 r1", "delete dynamo/workers/w1 expired", "put dynamo/workers/w1 r1"]);
  });

  test("a member answering again makes the leases renew every quarter second for a while", async () => {
    using gw = fakeGateway();
    await using store = await openEtcdDiscoveryStore({ endpoints: [gw.url], leaseTtlMs: 9_000, memberTimeoutMs: 300, logger: warningLog().logger });
    await store.put(keys.worker("dynamo", "mine"), 1);
    gw.state.silent = true;
    await waitFor(() => discoveryHealth(store).members?.[0]?.answering === false, { what: "the member reported silent" });
    const before = gw.state.keepalives;
    gw.state.silent = false;
    // At the usual cadence (every 3 s for a 9 s lease) four renewals would take 12 s.
    await waitFor(() => gw.state.keepalives >= before + 4, { what: "four renewals soon after the member answers again", timeoutMs: 4_000 });
  });
});
