// Behaviour every discovery backend must show, run against each implementation (file today, etcd
// later), as hono runs one suite against every adapter. A fixture opens several clients of one
// backing store, standing in for several processes.
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { waitFor } from "../../test/harness.ts";
import { keys } from "./keys.ts";
import type { DiscoveryEvent, DiscoveryLogger, DiscoveryStore } from "./store.ts";

export interface StoreFixture extends AsyncDisposable {
  /** Opens another client of the same backing store. Leases short enough to watch them lapse. */
  open(): Promise<DiscoveryStore>;
  /** The fixture's lease TTL, so tests can wait for renewals. */
  readonly leaseTtlMs: number;
}

/** Collects watch events and lets a test wait for a count or a matching event. */
export function eventLog() {
  const events: DiscoveryEvent[] = [];
  return {
    events,
    listener: (e: DiscoveryEvent) => void events.push(e),
    summary: () => events.map((e) => (e.type === "put" ? `put ${e.entry.key} r${e.entry.revision}` : `delete ${e.key} ${e.reason}`)),
    until: (n: number, what = `${n} events`) => waitFor(() => events.length >= n, { what, timeoutMs: 5_000 }),
  };
}

/** What a consumer of the watch believes is live: key → `r<revision>=<value>`. */
export function believed(log: ReturnType<typeof eventLog>): Record<string, string> {
  const state: Record<string, string> = {};
  for (const e of log.events) {
    if (e.type === "put") state[e.entry.key] = `r${e.entry.revision}=${JSON.stringify(e.entry.value)}`;
    else delete state[e.key];
  }
  return state;
}

/** A discovery logger that keeps its warnings (tests check what was said). */
export function warningLog(): { warnings: string[]; logger: DiscoveryLogger } {
  const warnings: string[] = [];
  return { warnings, logger: { warn: (m) => void warnings.push(m), debug: () => {} } };
}

export function discoveryStoreSuite(backend: string, makeFixture: () => Promise<StoreFixture>): void {
  describe(`discovery store contract: ${backend}`, () => {
    let fixture: StoreFixture;
    beforeEach(async () => {
      fixture = await makeFixture();
    });
    afterEach(async () => {
      await fixture[Symbol.asyncDispose]();
    });

    test("put is visible to another client's list with value, owner and revision", async () => {
      await using a = await fixture.open();
      await using b = await fixture.open();
      await a.put(keys.worker("dynamo", "w1"), { model: "m", dp: 2 });
      const [entry, ...rest] = await b.list(keys.kindPrefix("dynamo", "worker"));
      expect(rest).toEqual([]);
      expect(entry?.key).toBe("dynamo/workers/w1");
      expect(entry?.value).toEqual({ model: "m", dp: 2 });
      expect(entry?.revision).toBe(1);
      expect(entry?.owner.pid).toBe(process.pid);
      expect(entry?.leaseExpiresAtMs).toBeGreaterThan(Date.now());
    });

    test("list filters by prefix and sorts by key", async () => {
      await using a = await fixture.open();
      for (const id of ["w3", "w1", "w2"]) await a.put(keys.worker("dynamo", id), id);
      await a.put(keys.agent("dynamo", "agent-1"), {});
      const workers = await a.list(keys.kindPrefix("dynamo", "worker"));
      expect(workers.map((e) => e.value)).toEqual(["w1", "w2", "w3"]);
      expect((await a.list(keys.namespacePrefix("dynamo"))).length).toBe(4);
      expect(await a.list("dynamo/workers/w9")).toEqual([]);
    });

    test("an update is published with its new value and the next revision, unaffected by later changes to the object put", async () => {
      await using a = await fixture.open();
      await using b = await fixture.open();
      const value = { n: 1 };
      const rec = await a.put(keys.agent("dynamo", "x"), value);
      value.n = 99; // mutating the caller's object must not leak into renewals
      await rec.update({ n: 2 });
      const [entry] = await b.list(keys.agent("dynamo", "x"));
      expect(entry?.value).toEqual({ n: 2 });
      expect(entry?.revision).toBe(2);
    });

    test("withdraw removes the record, is idempotent, and forbids later updates", async () => {
      await using a = await fixture.open();
      const rec = await a.put(keys.worker("dynamo", "w1"), 1);
      await rec.withdraw();
      await rec.withdraw();
      expect(await a.list(keys.namespacePrefix("dynamo"))).toEqual([]);
      await expect(rec.update(2)).rejects.toThrow(/withdrawn/);
      // The key is free again for a new put.
      const again = await a.put(keys.worker("dynamo", "w1"), 3);
      expect((await a.list("dynamo/"))[0]?.value).toBe(3);
      await again.withdraw();
    });

    test("leases are renewed: the record outlives several TTLs and watchers see no churn", async () => {
      await using a = await fixture.open();
      await using b = await fixture.open();
      const log = eventLog();
      await using _w = await b.watch("dynamo/", log.listener);
      await a.put(keys.worker("dynamo", "w1"), "v");
      await log.until(1);
      const first = (await b.list("dynamo/"))[0]?.leaseExpiresAtMs ?? 0;
      // Renewed at least three TTLs' worth: every lease the first write granted has long lapsed.
      await waitFor(async () => ((await b.list("dynamo/"))[0]?.leaseExpiresAtMs ?? 0) > first + 3 * fixture.leaseTtlMs, {
        what: "three TTLs of renewals",
        timeoutMs: 20 * fixture.leaseTtlMs,
      });
      expect(log.summary()).toEqual(["put dynamo/workers/w1 r1"]);
    });

    test("watch delivers the initial list (sorted) before resolving, then puts, updates and deletes", async () => {
      await using a = await fixture.open();
      await using b = await fixture.open();
      await a.put(keys.worker("dynamo", "b"), 1);
      await a.put(keys.worker("dynamo", "a"), 1);
      const log = eventLog();
      await using _w = await b.watch(keys.kindPrefix("dynamo", "worker"), log.listener);
      expect(log.summary()).toEqual(["put dynamo/workers/a r1", "put dynamo/workers/b r1"]);

      const c = await a.put(keys.worker("dynamo", "c"), { x: 1 });
      await log.until(3);
      await c.update({ x: 2 });
      await log.until(4);
      await c.withdraw();
      await log.until(5);
      expect(log.summary().slice(2)).toEqual(["put dynamo/workers/c r1", "put dynamo/workers/c r2", "delete dynamo/workers/c removed"]);
      const update = log.events[3];
      expect(update?.type === "put" && update.entry.value).toEqual({ x: 2 });
    });

    test("namespaces are separate, including ns1 vs ns10", async () => {
      await using a = await fixture.open();
      await a.put(keys.worker("ns1", "w"), "one");
      await a.put(keys.worker("ns10", "w"), "ten");
      expect((await a.list(keys.namespacePrefix("ns1"))).map((e) => e.value)).toEqual(["one"]);
      const log = eventLog();
      await using _w = await a.watch(keys.namespacePrefix("ns10"), log.listener);
      await a.put(keys.worker("ns1", "w2"), "one-more");
      await a.put(keys.worker("ns10", "w2"), "ten-more");
      await log.until(2);
      expect(log.summary()).toEqual(["put ns10/workers/w r1", "put ns10/workers/w2 r1"]);
    });

    test("two watches with different prefixes each get only their records", async () => {
      await using a = await fixture.open();
      const workers = eventLog();
      const agents = eventLog();
      await using _w1 = await a.watch(keys.kindPrefix("dynamo", "worker"), workers.listener);
      await using _w2 = await a.watch(keys.kindPrefix("dynamo", "agent"), agents.listener);
      await a.put(keys.worker("dynamo", "w"), 1);
      await a.put(keys.agent("dynamo", "g"), 2);
      await workers.until(1);
      await agents.until(1);
      expect(workers.summary()).toEqual(["put dynamo/workers/w r1"]);
      expect(agents.summary()).toEqual(["put dynamo/agents/g r1"]);
    });

    test("a throwing listener does not stop the watch", async () => {
      await using a = await fixture.open();
      const seen: string[] = [];
      await using _w = await a.watch("dynamo/", (e) => {
        seen.push(e.type);
        throw new Error("listener bug");
      });
      await a.put(keys.worker("dynamo", "1"), 1);
      await a.put(keys.worker("dynamo", "2"), 2);
      await waitFor(() => seen.length >= 2, { what: "two events despite throwing listener" });
    });

    test("an async listener that rejects does not stop the watch either", async () => {
      await using a = await fixture.open();
      const seen: string[] = [];
      await using _w = await a.watch("dynamo/", async (e) => {
        seen.push(e.type);
        throw new Error("async listener bug");
      });
      await a.put(keys.worker("dynamo", "1"), 1);
      await a.put(keys.worker("dynamo", "2"), 2);
      await waitFor(() => seen.length >= 2, { what: "two events despite a rejecting listener" });
    });

    test("last writer wins when two clients put one key", async () => {
      await using a = await fixture.open();
      await using b = await fixture.open();
      await a.put(keys.agent("dynamo", "x"), "from-a");
      const fromB = await b.put(keys.agent("dynamo", "x"), "from-b");
      const [entry] = await a.list("dynamo/");
      expect(entry?.value).toBe("from-b");
      await fromB.withdraw();
    });

    test("close() withdraws every record, ends watches, and refuses further use", async () => {
      const a = await fixture.open();
      await using b = await fixture.open();
      const log = eventLog();
      await using _w = await b.watch("dynamo/", log.listener);
      await a.put(keys.worker("dynamo", "w1"), 1);
      await a.put(keys.intent("dynamo", "owner:1/2/3", "pub"), 2);
      const own = eventLog();
      await a.watch("dynamo/", own.listener);
      await log.until(2);
      await a.close();
      await a.close();
      await log.until(4, "deletes after close");
      expect(log.summary().slice(2).sort()).toEqual(["delete dynamo/intents/owner:1%2F2%2F3/pub removed", "delete dynamo/workers/w1 removed"]);
      expect(own.events.length).toBe(2); // its own watch stopped before its records were deleted
      await expect(a.list("dynamo/")).rejects.toThrow(/closed/);
      await expect(a.watch("dynamo/", () => {})).rejects.toThrow(/closed/);
      await expect(a.put(keys.worker("dynamo", "w2"), 1)).rejects.toThrow(/closed/);
    });

    test("bad keys, prefixes and values are rejected with a message naming them", async () => {
      await using a = await fixture.open();
      await expect(a.put("", 1)).rejects.toThrow(/discovery key "" is invalid: empty/);
      await expect(a.put("dynamo//x", 1)).rejects.toThrow(/empty segment/);
      await expect(a.put("../etc/passwd", 1)).rejects.toThrow(/namespace/);
      await expect(a.put("dynamo/x\n", 1)).rejects.toThrow(/control character/);
      await expect(a.put(keys.worker("dynamo", "w"), { big: 1n })).rejects.toThrow(/dynamo\/workers\/w: value has no JSON form/);
      await expect(a.put(keys.worker("dynamo", "w"), undefined)).rejects.toThrow(/no JSON form/);
      await expect(a.list("dynamo/\u0000")).rejects.toThrow(/prefix/);
      expect(await a.list("dynamo/")).toEqual([]); // nothing half-written by the rejected puts
    });

    test("a put right after an un-awaited withdraw of the same key survives the withdrawal", async () => {
      await using a = await fixture.open();
      const first = await a.put(keys.worker("dynamo", "w"), 1);
      void first.withdraw();
      const second = await a.put(keys.worker("dynamo", "w"), 2);
      await first.withdraw();
      expect((await a.list("dynamo/")).map((e) => e.value)).toEqual([2]);
      await second.withdraw();
    });

    test("a second put of a key this client holds is refused", async () => {
      await using a = await fixture.open();
      await a.put(keys.worker("dynamo", "w"), 1);
      await expect(a.put(keys.worker("dynamo", "w"), 2)).rejects.toThrow(/already held by this process/);
    });
  });
}
