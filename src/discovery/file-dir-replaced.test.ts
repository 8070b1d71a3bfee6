// File backend: the discovery directory replaced under running stores (removed and re-created, or
// swapped for a restored copy): watchers list it again and end with exactly what it holds, owners
// re-write their records there, and both are counted.
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { cp, mkdir, rename, rm } from "node:fs/promises";
import { makeTempDir, waitFor, type TempDir } from "../../test/harness.ts";
import { renderMetrics } from "../protocol/prometheus.ts";
import { believed, eventLog, warningLog } from "./discovery-store.suite.ts";
import { openFileDiscoveryStore, type FileDiscoveryStore } from "./file-store.ts";
import { keys } from "./keys.ts";
import { discoveryMetricFamilies } from "./status.ts";
import type { DiscoveryEntry, DiscoveryLogger } from "./store.ts";

const LEASE_TTL_MS = 150;


const asState = (entries: readonly DiscoveryEntry[]) => Object.fromEntries(entries.map((e) => [e.key, `r${e.revision}=${JSON.stringify(e.value)}`]));

/** Puts `copy` where `dir` is; the owner's next write may re-create `dir` in between, so until it lands. */
async function swapIn(copy: string, dir: string): Promise<void> {
  for (;;) {
    await rm(dir, { recursive: true, force: true });
    try {
      return await rename(copy, dir);
    } catch (err) {
      if (!["ENOTEMPTY", "EEXIST"].includes((err as { code?: string }).code ?? "")) throw err;
    }
  }
}

describe("file discovery: the directory replaced", () => {
  let tmp: TempDir;
  let dir: string;
  beforeEach(async () => {
    tmp = await makeTempDir("kvcr-disc-swap-");
    dir = `${tmp.path}/discovery`;
    await mkdir(dir);
  });
  afterEach(async () => {
    await tmp[Symbol.asyncDispose]();
  });

  const open = (logger: DiscoveryLogger, useFsWatch = true) => openFileDiscoveryStore({ dir, leaseTtlMs: LEASE_TTL_MS, pollIntervalMs: 15, gcGraceMs: 50, useFsWatch, logger });
  const settlesOn = (store: FileDiscoveryStore, log: ReturnType<typeof eventLog>, want: Record<string, string>, what: string) =>
    waitFor(async () => Bun.deepEquals(believed(log), want) && Bun.deepEquals(asState(await store.list("dynamo/")), want), { what });

  for (const useFsWatch of [true, false]) {
    test(`swapped for an older copy that still holds the owner's lease file: records re-written as they are now (${useFsWatch ? "fs.watch + poll" : "poll only"})`, async () => {
      const owner = warningLog();
      const watcher = warningLog();
      await using a = await open(owner.logger, useFsWatch);
      await using b = await open(watcher.logger, useFsWatch);
      const log = eventLog();
      await using _w = await b.watch("dynamo/", log.listener);
      const a1 = await a.put(keys.agent("dynamo", "a1"), "v1");
      await settlesOn(b, log, { "dynamo/agents/a1": 'r1="v1"' }, "the first record");
      await cp(dir, `${tmp.path}/backup`, { recursive: true }); // a1 at r1 and a's lease file
      await a1.update("v2");
      await a.put(keys.agent("dynamo", "a2"), "new");
      await settlesOn(b, log, { "dynamo/agents/a1": 'r2="v2"', "dynamo/agents/a2": 'r1="new"' }, "the changes after the copy");

      await swapIn(`${tmp.path}/backup`, dir);
      await waitFor(() => b.status().watchResyncs >= 1, { what: "the watcher to notice the new directory" });
      await settlesOn(b, log, { "dynamo/agents/a1": 'r2="v2"', "dynamo/agents/a2": 'r1="new"' }, "a's records re-written in the swapped directory");
      expect(a.status().leaseRegrants).toBeGreaterThanOrEqual(1);
      expect(owner.warnings.some((w) => w.includes("was replaced"))).toBe(true);
      expect(watcher.warnings.some((w) => w.includes("was replaced"))).toBe(true);
      expect(renderMetrics(discoveryMetricFamilies(b))).toMatch(/kvcr_discovery_watch_resyncs_total\{backend="file"\} [1-9]/);
    });
  }

  test("removed and re-created empty: the watcher lists it again (counted) and the owner's records come back", async () => {
    await using a = await open(warningLog().logger);
    await using b = await open(warningLog().logger);
    const log = eventLog();
    await using _w = await b.watch("dynamo/", log.listener);
    await a.put(keys.worker("dynamo", "w1"), 1);
    await settlesOn(b, log, { "dynamo/workers/w1": "r1=1" }, "the record");
    expect(b.status().watchResyncs).toBe(0);
    await rm(dir, { recursive: true });
    await mkdir(dir, { recursive: true }); // the owner's next write may have re-created it first
    await waitFor(() => b.status().watchResyncs >= 1, { what: "the watcher to notice the new directory" });
    await settlesOn(b, log, { "dynamo/workers/w1": "r1=1" }, "the record back");
    expect(a.status().leaseRegrants).toBeGreaterThanOrEqual(1);
  });
});
