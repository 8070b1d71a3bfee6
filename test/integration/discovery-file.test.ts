// File discovery across real processes: a SIGKILLed owner's record lapses and is collected, a
// stalled owner's records lapse and come back when it resumes, a reader never sees a torn record
// while another process rewrites it, close() leaves nothing alive.
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { eventLog } from "../../src/discovery/discovery-store.suite.ts";
import { keyToFileName } from "../../src/discovery/file-names.ts";
import { openFileDiscoveryStore } from "../../src/discovery/file-store.ts";
import { keys } from "../../src/discovery/keys.ts";
import { makeTempDir, spawnBun, waitFor, withTimeout, type TempDir } from "../harness.ts";

const CHILD = join(import.meta.dir, "..", "fixtures", "discovery-child.ts");
const quiet = { warn: () => {}, debug: () => {} };

describe("file discovery across processes", () => {
  let tmp: TempDir;
  beforeEach(async () => {
    tmp = await makeTempDir("kvcr-disc-mp-");
  });
  afterEach(async () => {
    await tmp[Symbol.asyncDispose]();
  });

  test("a SIGKILLed owner's record lapses for other processes and its file is collected", async () => {
    const key = keys.worker("dynamo", "doomed");
    await using observer = await openFileDiscoveryStore({ dir: tmp.path, pollIntervalMs: 10, gcGraceMs: 50, logger: quiet });
    const log = eventLog();
    await using _w = await observer.watch(keys.namespacePrefix("dynamo"), log.listener);
    await using child = spawnBun(CHILD, [JSON.stringify({ mode: "hold", dir: tmp.path, key, leaseTtlMs: 300 })]);
    const ready = JSON.parse(await child.readLine((l) => l.includes('"ready"'))) as { pid: number; instanceId: string };

    await log.until(1, "the child's record");
    const put = log.events[0];
    expect(put?.type === "put" && put.entry.owner).toEqual({ pid: ready.pid, instanceId: ready.instanceId });
    expect((await observer.list("dynamo/")).map((e) => e.key)).toEqual([key]);

    child.proc.kill("SIGKILL");
    await withTimeout(child.proc.exited, 5_000, "child exit after SIGKILL");
    // The file is still there (nobody withdrew it); only the lease tells readers it is dead.
    await log.until(2, "the record's lease to lapse");
    expect(log.summary()).toEqual([`put ${key} r1`, `delete ${key} expired`]);
    expect(await observer.list("dynamo/")).toEqual([]);
    await waitFor(async () => !(await readdir(tmp.path)).includes(keyToFileName(key)), { what: "the lapsed file to be collected" });
  });

  test("an owner stalled past its lease loses its records to readers, and its next renewal puts every one back", async () => {
    const n = 20;
    const base = keys.worker("dynamo", "stalled");
    await using observer = await openFileDiscoveryStore({ dir: tmp.path, pollIntervalMs: 10, gcGraceMs: 50, logger: quiet });
    const log = eventLog();
    await using _w = await observer.watch(keys.namespacePrefix("dynamo"), log.listener);
    await using child = spawnBun(CHILD, [JSON.stringify({ mode: "hold", dir: tmp.path, key: base, count: n, leaseTtlMs: 300 })]);
    await child.readLine((l) => l.includes('"ready"'));
    await log.until(n, "the child's records");
    const recordFiles = async () => (await readdir(tmp.path)).filter((f) => !f.startsWith("."));
    try {
      // SIGSTOP stands in for a starved or stalled process: its one lease lapses, so all its
      // records do; the observer reports them expired and collects the files and the lease file.
      child.proc.kill("SIGSTOP");
      await log.until(2 * n, "every record to lapse");
      expect(log.summary().slice(n).every((e) => e.endsWith(" expired"))).toBe(true);
      await waitFor(async () => (await readdir(tmp.path)).filter((f) => !f.startsWith(".tmp-")).length === 0, { what: "records and lease file collected" });
    } finally {
      child.proc.kill("SIGCONT");
    }
    // Its renewal finds the lease lapsed and its files gone: lease and records are written again.
    await log.until(3 * n, "every record back");
    expect(log.summary().slice(2 * n).every((e) => e.startsWith("put "))).toBe(true);
    await waitFor(async () => (await recordFiles()).length === n, { what: `${n} record files back` });
    expect((await observer.list("dynamo/")).length).toBe(n);
    await child.readErrLine((l) => l.includes("lapsed") && l.includes(`${n} record(s)`)); // one warning for the lease, not one per record
  });

  test("a reader never sees a partial record while another process keeps rewriting it", async () => {
    const key = keys.agent("dynamo", "busy");
    const path = join(tmp.path, keyToFileName(key));
    await using child = spawnBun(CHILD, [JSON.stringify({ mode: "hammer", dir: tmp.path, key, leaseTtlMs: 10_000 })]);
    await child.readLine((l) => l.includes('"ready"'));
    await using reader = await openFileDiscoveryStore({ dir: tmp.path, logger: quiet });

    const seqs = new Set<number>();
    let reads = 0;
    // Read until many distinct versions went by (bounded); every read must be whole and
    // self-consistent. Not inside waitFor: a torn read must fail the test, not be retried. The
    // bound is under the per-test timeout, so running out of it says how far the reads got.
    const deadline = performance.now() + 10_000;
    while (seqs.size < 100) {
      if (performance.now() > deadline) throw new Error(`only ${seqs.size} versions seen in 10 s`);
      const text = await readFile(path, "utf8");
      const doc = JSON.parse(text) as { value: Payload }; // throws on a torn file
      checkPayload(doc.value);
      seqs.add(doc.value.seq);
      const [entry] = await reader.list("dynamo/");
      checkPayload(entry?.value as Payload);
      reads += 2;
    }
    expect(reads).toBeGreaterThanOrEqual(200);
  });

  test("close() stops every timer and watcher: the child exits by itself, its records withdrawn", async () => {
    const key = keys.worker("dynamo", "tidy");
    await using child = spawnBun(CHILD, [JSON.stringify({ mode: "close", dir: tmp.path, key, leaseTtlMs: 5_000 })]);
    await child.readLine((l) => l.includes('"closed"'));
    const code = await withTimeout(child.proc.exited, 4_000, "child exit after close() (something kept it alive)");
    expect(code).toBe(0);
    expect((await readdir(tmp.path)).filter((n) => !n.startsWith(".tmp-"))).toEqual([]);
  });
});

interface Payload {
  seq: number;
  size: number;
  fill: string;
  pad: string;
}

function checkPayload(v: Payload | undefined): void {
  if (typeof v?.pad !== "string" || v.pad.length !== v.size || v.pad !== v.fill.repeat(v.size)) {
    throw new Error(`torn record: seq ${v?.seq} size ${v?.size} pad length ${v?.pad?.length}`);
  }
}
