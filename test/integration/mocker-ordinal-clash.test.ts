// A mocker whose CacheOwner ordinal range overlaps a live mocker's is refused at start-up with a
// message naming both; disjoint ranges start side by side; a restart of the same worker on the
// same raw endpoint is its own previous incarnation, not an overlap.
import { describe, expect, test } from "bun:test";
import { keys } from "../../src/discovery/keys.ts";
import { openFileDiscoveryStore } from "../../src/discovery/file-store.ts";
import { startMocker } from "../../src/roles/mocker/index.ts";
import { ordinalOverlaps } from "../../src/roles/mocker/ordinal-clash.ts";
import { makeTempDir, withTimeout } from "../harness.ts";
import { logger, mockerConfig } from "./mocker-kit.ts";

const quiet = { warn: () => {}, debug: () => {} };
const args = (dir: string, ordinal: number, host = "127.0.0.1") => [
  "--num-workers", "2", "--zmq-kv-events-ports", "0,0", "--num-host-blocks", "16", "--kv-state-agent",
  "--kv-state-agent-raw-host", host, "--kv-state-agent-cache-slot", String(ordinal), "--discovery-dir", dir, "--namespace", "ovl",
];

describe("CacheOwner ordinal overlap at mocker start-up", () => {
  test("a range overlapping a live mocker's is refused naming both owners, publishing nothing, while a disjoint range starts", async () => {
    await using dir = await makeTempDir("kvcr-ovl-");
    await using storeA = await openFileDiscoveryStore({ dir: dir.path, logger: quiet });
    await using storeB = await openFileDiscoveryStore({ dir: dir.path, logger: quiet });
    await using storeC = await openFileDiscoveryStore({ dir: dir.path, logger: quiet });
    await using a = await startMocker(mockerConfig(args(dir.path, 0)), { logger, env: {}, discovery: storeA });
    await withTimeout(a.ready, 10_000, "mocker A");
    await using b = await startMocker(mockerConfig(args(dir.path, 1, "127.0.0.1")), { logger, env: {}, discovery: storeB });
    const refused = await withTimeout(b.ready.then(() => undefined, (e: unknown) => e as Error), 10_000, "mocker B's refusal");
    expect(refused?.message).toMatch(/CacheOwner ordinal ranges overlap: CacheOwner ordinal 1 is already published by worker kvcr-slot-1 at tcp:\/\/127\.0\.0\.1:\d+ \(pid \d+\); this mocker \(pid \d+, ordinals 1–2, raw host 127\.0\.0\.1\) would publish it at tcp:\/\/127\.0\.0\.1:\d+/);
    expect(refused?.message).toContain("--cache-slot-base");
    // Only A's records are in discovery: 2 workers, 2 intents.
    const all = await storeC.list(keys.namespacePrefix("ovl"));
    expect(all.every((e) => e.owner.instanceId === storeA.owner.instanceId)).toBe(true);
    expect(all).toHaveLength(4);

    await using c = await startMocker(mockerConfig(args(dir.path, 2)), { logger, env: {}, discovery: storeC });
    await withTimeout(c.ready, 10_000, "mocker C with a disjoint range");
  });

  test("an intent at the raw endpoint this process now holds is its previous incarnation", () => {
    const owner = `${"ab".repeat(16)}:${"cd".repeat(16)}/${"0".repeat(16)}/${"0".repeat(31)}7`;
    const entry = (raw: string, instanceId = "other") => ({ key: "k", value: { cache_owner_id: owner, worker_id: "kvcr-slot-7", raw_endpoint: raw }, owner: { pid: 1, instanceId }, revision: 1, leaseExpiresAtMs: 0 });
    const ours = { namespace: "ovl", owners: new Map([[owner, "tcp://127.0.0.3:5557"]]), describe: "me", selfInstanceId: "self" };
    expect(ordinalOverlaps(ours, [entry("tcp://127.0.0.3:5557")])).toEqual([]);
    expect(ordinalOverlaps(ours, [entry("tcp://127.0.0.2:5557", "self")])).toEqual([]);
    expect(ordinalOverlaps({ ...ours, ownerAlive: () => false }, [entry("tcp://127.0.0.2:5557")])).toEqual([]); // file backend: writer gone
    expect(ordinalOverlaps(ours, [entry("tcp://127.0.0.2:5557")])).toEqual([
      "CacheOwner ordinal 7 is already published by worker kvcr-slot-7 at tcp://127.0.0.2:5557 (pid 1); this mocker (me) would publish it at tcp://127.0.0.3:5557",
    ]);
  });
});
