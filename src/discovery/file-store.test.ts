// File backend: the shared contract suite (with and without fs.watch), plus what only files have:
// on-disk layout, lapsed leases and dead owners' records ignored and collected, malformed files
// skipped with a warning.
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { mkdir, readdir, readFile, rm, stat, utimes, writeFile } from "node:fs/promises";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { makeTempDir, pidAlive, spawnChild, waitFor, type TempDir } from "../../test/harness.ts";
import { discoveryStoreSuite, eventLog } from "./discovery-store.suite.ts";
import { keyToFileName } from "./file-names.ts";
import { LEASE_FORMAT, LEASED_RECORD_FORMAT } from "./file-record.ts";
import { defaultDiscoveryDir, openFileDiscoveryStore, type FileDiscoveryOptions } from "./file-store.ts";
import { keys } from "./keys.ts";
import type { DiscoveryLogger } from "./store.ts";

const LEASE_TTL_MS = 150;

function captureLogger() {
  const warnings: string[] = [];
  const logger: DiscoveryLogger = { warn: (m) => void warnings.push(m), debug: () => {} };
  return { warnings, logger };
}

for (const useFsWatch of [true, false]) {
  discoveryStoreSuite(`file (${useFsWatch ? "fs.watch + poll" : "poll only"})`, async () => {
    const tmp = await makeTempDir("kvcr-disc-");
    const stores: AsyncDisposable[] = [];
    return {
      leaseTtlMs: LEASE_TTL_MS,
      async open() {
        const store = await openFileDiscoveryStore({ dir: tmp.path, leaseTtlMs: LEASE_TTL_MS, pollIntervalMs: 15, gcGraceMs: 50, useFsWatch, logger: captureLogger().logger });
        stores.push(store);
        return store;
      },
      async [Symbol.asyncDispose]() {
        for (const s of stores) await s[Symbol.asyncDispose]();
        await tmp[Symbol.asyncDispose]();
      },
    };
  });
}

describe("file discovery backend", () => {
  let tmp: TempDir;
  let log: ReturnType<typeof captureLogger>;
  const open = (extra: FileDiscoveryOptions = {}) =>
    openFileDiscoveryStore({ dir: tmp.path, leaseTtlMs: LEASE_TTL_MS, pollIntervalMs: 15, gcGraceMs: 50, logger: log.logger, ...extra });
  const recordPath = (key: string) => join(tmp.path, keyToFileName(key));
  let handLeases = 0;
  /** Writes a record file and its own lease file by hand, as a crashed or foreign process would have left them. */
  const writeRecord = async (key: string, leaseExpiresAtMs: number, extra: Record<string, unknown> = {}, pid = 1) => {
    const owner = { pid, instanceId: "feedface" };
    const lease = `.lease-feedface-hand${++handLeases}.json`;
    await writeFile(join(tmp.path, lease), JSON.stringify({ format: LEASE_FORMAT, owner, leaseTtlMs: 1000, leaseExpiresAtMs }));
    await writeFile(recordPath(key), JSON.stringify({ format: LEASED_RECORD_FORMAT, key, value: { hand: true }, owner, revision: 1, leaseTtlMs: 1000, lease, ...extra }));
  };
  const recordFiles = async () => (await readdir(tmp.path)).filter((n) => !n.startsWith(".lease-"));
  const leaseFiles = async () => (await readdir(tmp.path)).filter((n) => n.startsWith(".lease-"));
  /** The pid of a process that has exited and been reaped: no process has it (barring reuse within ms). */
  const exitedPid = async () => {
    await using child = spawnChild(["true"], { stdout: "ignore", stderr: "ignore" });
    await child.proc.exited;
    expect(pidAlive(child.proc.pid)).toBe(false);
    return child.proc.pid;
  };

  beforeEach(async () => {
    tmp = await makeTempDir("kvcr-disc-");
    log = captureLogger();
  });
  afterEach(async () => {
    await tmp[Symbol.asyncDispose]();
  });

  test("one JSON file per record, named by the escaped key, holding value, owner and the name of its process's lease file", async () => {
    await using store = await open();
    const key = keys.intent("dynamo", "a:b/c/d", "w0");
    await store.put(key, { endpoint: "tcp://127.0.0.1:5557" });
    await store.put(keys.worker("dynamo", "w0"), 1);
    const names = (await readdir(tmp.path)).filter((n) => !n.startsWith("."));
    expect(names.sort()).toEqual(["dynamo%2Fintents%2Fa%3Ab%252Fc%252Fd%2Fw0.json", "dynamo%2Fworkers%2Fw0.json"]);
    const lease = `.lease-${store.owner.instanceId}-${LEASE_TTL_MS}.json`;
    const doc = JSON.parse(await readFile(join(tmp.path, names[0] as string), "utf8"));
    expect(doc).toEqual({ format: LEASED_RECORD_FORMAT, key, value: { endpoint: "tcp://127.0.0.1:5557" }, owner: { pid: process.pid, instanceId: store.owner.instanceId }, revision: 1, leaseTtlMs: LEASE_TTL_MS, lease });
    // One lease file for both records: the expiry lives there.
    expect((await readdir(tmp.path)).filter((n) => n.startsWith(".lease-"))).toEqual([lease]);
    const leaseDoc = JSON.parse(await readFile(join(tmp.path, lease), "utf8"));
    expect(leaseDoc).toMatchObject({ format: LEASE_FORMAT, owner: { pid: process.pid, instanceId: store.owner.instanceId }, leaseTtlMs: LEASE_TTL_MS });
    expect(leaseDoc.leaseExpiresAtMs).toBeGreaterThan(Date.now());
    await store.close();
    expect(await readdir(tmp.path)).toEqual([]); // records withdrawn, then the lease file removed
  });

  test("renewals rewrite the one lease file, never the records: record files keep their inode over several TTLs", async () => {
    // With one lease per record, every renewal rewrote every record (temp file + rename: a new
    // inode each time), ~3,700 rewrites a second for `up` at 4 × 1,024 workers, each waking every
    // watcher; on a busy host renewals fell behind and records lapsed.
    await using store = await open();
    await using reader = await open();
    const events = eventLog();
    await using _w = await reader.watch("dynamo/", events.listener);
    const recordKeys = Array.from({ length: 40 }, (_, i) => keys.worker("dynamo", `w${i}`));
    for (const key of recordKeys) await store.put(key, { i: key });
    await events.until(recordKeys.length);
    const inodes = () => Promise.all(recordKeys.map(async (key) => (await stat(recordPath(key))).ino));
    const before = await inodes();
    const first = (await reader.list("dynamo/"))[0]?.leaseExpiresAtMs ?? 0;
    await waitFor(async () => ((await reader.list("dynamo/"))[0]?.leaseExpiresAtMs ?? 0) > first + 3 * LEASE_TTL_MS, { what: "three TTLs of renewals" });
    expect(await inodes()).toEqual(before);
    expect(events.events.length).toBe(recordKeys.length); // and no churn for the watcher
    const entries = await reader.list("dynamo/");
    expect(entries.length).toBe(recordKeys.length);
    expect(new Set(entries.map((e) => e.leaseExpiresAtMs)).size).toBe(1); // one lease for all
  });

  test("a lapsed record is ignored at once and deleted after the grace period", async () => {
    await using store = await open();
    await writeRecord(keys.worker("dynamo", "dead"), Date.now() - 10);
    await writeRecord(keys.worker("dynamo", "alive"), Date.now() + 60_000);
    expect((await store.list("dynamo/")).map((e) => e.key)).toEqual(["dynamo/workers/alive"]);
    // The grace period keeps the file a little while; a later list() deletes it.
    await waitFor(
      async () => {
        await store.list("dynamo/");
        return !(await readdir(tmp.path)).includes(keyToFileName(keys.worker("dynamo", "dead")));
      },
      { what: "expired record file collected by list()" },
    );
    expect(await recordFiles()).toEqual([keyToFileName(keys.worker("dynamo", "alive"))]);
  });

  test("a watcher sees a record expire when its owner stops renewing, then the file is collected", async () => {
    await using store = await open();
    const events = eventLog();
    await using _w = await store.watch("dynamo/", events.listener);
    const key = keys.worker("dynamo", "crashed");
    await writeRecord(key, Date.now() + 200);
    await events.until(2, "put then expiry");
    expect(events.summary()).toEqual([`put ${key} r1`, `delete ${key} expired`]);
    await waitFor(async () => !(await readdir(tmp.path)).includes(keyToFileName(key)), { what: "file collected by the watcher" });
  });

  test("a record whose owner pid is gone is not listed and its files are collected at once, though its lease has a minute left", async () => {
    await using store = await open();
    const deadPid = await exitedPid();
    const dead = keys.worker("dynamo", "dead-owner");
    const alive = keys.worker("dynamo", "our-process");
    await writeRecord(dead, Date.now() + 60_000, {}, deadPid);
    await writeRecord(alive, Date.now() + 60_000, {}, process.pid); // a live pid: only the lease counts
    expect(await leaseFiles()).toHaveLength(2);
    expect((await store.list("dynamo/")).map((e) => e.key)).toEqual([alive]);
    // No grace period: a process that is gone renews nothing, so the one list() collected both files.
    expect(await recordFiles()).toEqual([keyToFileName(alive)]);
    expect(await leaseFiles()).toEqual([`.lease-feedface-hand${handLeases}.json`]);
    expect((await store.list("dynamo/")).map((e) => e.key)).toEqual([alive]);
  });

  test("a watcher sees a record deleted as expired when its owner process dies, while its lease is still in the future", async () => {
    await using store = await open();
    const events = eventLog();
    const leaseExpiresAtMs = Date.now() + 60_000;
    const expiredAt: number[] = [];
    await using _w = await store.watch("dynamo/", (e) => {
      if (e.type === "delete") expiredAt.push(Date.now());
      events.listener(e);
    });
    await using owner = spawnChild(["sleep", "60"], { stdout: "ignore", stderr: "ignore" });
    const key = keys.worker("dynamo", "killed");
    const mine = keys.worker("dynamo", "mine");
    await writeRecord(mine, leaseExpiresAtMs, {}, process.pid);
    await events.until(1, "put of the record owned by this process");
    await writeRecord(key, leaseExpiresAtMs, {}, owner.proc.pid);
    await events.until(2, "put while the owner lives");
    owner.killGroup();
    await owner.proc.exited;
    await events.until(3, "expiry once the owner is gone");
    expect(events.summary()).toEqual([`put ${mine} r1`, `put ${key} r1`, `delete ${key} expired`]);
    expect(expiredAt[0]).toBeLessThan(leaseExpiresAtMs);
    await waitFor(async () => !(await readdir(tmp.path)).includes(keyToFileName(key)), { what: "the dead owner's record collected by the watcher" });
    expect(await recordFiles()).toEqual([keyToFileName(mine)]); // the live process's record stays
  });

  test("malformed and unreadable files are skipped with one warning naming each, without stopping the watch", async () => {
    await using store = await open();
    const events = eventLog();
    const bad = {
      json: keys.worker("dynamo", "bad-json"),
      format: keys.worker("dynamo", "bad-format"),
      key: keys.worker("dynamo", "bad-key"),
      owner: keys.worker("dynamo", "bad-owner"),
      dir: keys.worker("dynamo", "a-directory"),
    };
    await writeFile(recordPath(bad.json), '{"format": "kvcr-discovery-rec');
    await writeRecord(bad.format, Date.now() + 60_000, { format: "other/v9" });
    await writeRecord(bad.key, Date.now() + 60_000, { key: "dynamo/workers/someone-else" });
    await writeRecord(bad.owner, Date.now() + 60_000, { owner: { pid: "x" } });
    await mkdir(recordPath(bad.dir));
    await writeFile(join(tmp.path, "notes.txt"), "not ours"); // foreign files are not records at all
    await writeFile(join(tmp.path, "dynamo%2fworkers%2fx.json"), "{}"); // non-canonical escape: not ours

    await using _w = await store.watch("dynamo/", events.listener);
    const good = await store.put(keys.worker("dynamo", "good"), 1);
    await events.until(1);
    // Let several poll cycles re-list the directory: warnings must not repeat.
    const firstExpiry = (await store.list("dynamo/"))[0]?.leaseExpiresAtMs ?? 0;
    await waitFor(async () => ((await store.list("dynamo/"))[0]?.leaseExpiresAtMs ?? 0) > firstExpiry + LEASE_TTL_MS, { what: "renewals" });
    expect(events.summary()).toEqual(["put dynamo/workers/good r1"]);
    for (const [what, key] of Object.entries(bad)) {
      const mentions = log.warnings.filter((w) => w.includes(recordPath(key)));
      expect(mentions.length, `${what}: ${log.warnings.join("\n")}`).toBe(1);
    }
    expect(log.warnings.find((w) => w.includes(recordPath(bad.json)))).toMatch(/malformed record file .* not valid JSON/);
    expect(log.warnings.find((w) => w.includes(recordPath(bad.format)))).toMatch(/format is "other\/v9"/);
    expect(log.warnings.find((w) => w.includes(recordPath(bad.key)))).toMatch(/does not match its filename/);
    expect(log.warnings.find((w) => w.includes(recordPath(bad.owner)))).toMatch(/owner.pid/);
    expect(log.warnings.find((w) => w.includes(recordPath(bad.dir)))).toMatch(/unreadable record file/);
    expect(log.warnings.some((w) => w.includes("notes.txt") || w.includes("%2fworkers"))).toBe(false);

    // A record that turns malformed is dropped (its lease can no longer be read); fixed, it returns.
    await good.withdraw();
    // One scan may see several changes and reports them in key order: wait for each in turn.
    await events.until(2);
    const key = keys.worker("dynamo", "flaky");
    await writeRecord(key, Date.now() + 60_000);
    await events.until(3);
    await writeFile(recordPath(key), "garbage");
    await events.until(4);
    await writeRecord(key, Date.now() + 60_000, { revision: 2 });
    await events.until(5);
    expect(events.summary().slice(1)).toEqual(["delete dynamo/workers/good removed", `put ${key} r1`, `delete ${key} removed`, `put ${key} r2`]);
  });

  test("a record whose directory was wiped is re-created by the next renewal", async () => {
    await using store = await open();
    await using watcher = await open();
    const events = eventLog();
    await using _w = await watcher.watch("dynamo/", events.listener);
    await store.put(keys.agent("dynamo", "a1"), "here");
    await events.until(1);
    await rm(tmp.path, { recursive: true, force: true });
    await waitFor(async () => (await store.list("dynamo/")).length === 1, { what: "record re-published after dir removal" });
    // The watcher may or may not have seen the gap, but it must end with the record live again,
    // and must keep seeing changes in the re-created directory.
    await store.put(keys.agent("dynamo", "a2"), "new");
    await waitFor(() => events.summary().includes("put dynamo/agents/a2 r1"), { what: "a change in the re-created dir" });
    expect(events.summary().filter((e) => e.includes("/a1 ")).at(-1)).toBe("put dynamo/agents/a1 r1");
  });

  test("temp files left by a writer that died mid-write are swept once stale", async () => {
    await using store = await open();
    const stale = join(tmp.path, ".tmp-deadbeef-1");
    const fresh = join(tmp.path, ".tmp-cafe-1");
    await writeFile(stale, "{");
    await writeFile(fresh, "{");
    const longAgo = new Date(Date.now() - 3_600_000);
    await utimes(stale, longAgo, longAgo);
    await using _w = await store.watch("dynamo/", () => {});
    await waitFor(async () => !(await readdir(tmp.path)).includes(".tmp-deadbeef-1"), { what: "stale temp swept" });
    expect(await readdir(tmp.path)).toContain(".tmp-cafe-1");
  });

  test("bad options are a config error naming each", async () => {
    await expect(openFileDiscoveryStore({ dir: tmp.path, leaseTtlMs: 0, pollIntervalMs: Number.NaN })).rejects.toThrow(
      /discovery leaseTtlMs: 0 is invalid.*\n.*discovery pollIntervalMs: NaN is invalid/,
    );
  });

  test("a dir that cannot be created is an error naming it", async () => {
    await writeFile(join(tmp.path, "file"), "");
    await expect(openFileDiscoveryStore({ dir: join(tmp.path, "file", "sub") })).rejects.toThrow(/cannot create discovery dir .*file\/sub/);
  });

  test("the default dir is per user, on tmpfs where Linux has one", () => {
    const dir = defaultDiscoveryDir();
    expect(dir).toMatch(/kvcr-mock-discovery-[^/\\]+$/);
    if (process.platform === "linux" && existsSync("/dev/shm")) expect(dir.startsWith("/dev/shm/")).toBe(true);
  });
});
