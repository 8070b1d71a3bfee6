import { describe, expect, test } from "bun:test";
import { createBlockHasher } from "../../lib/xxh3.ts";
import { FlatBatch, flatFromBatch } from "../../protocol/kv-events/flat-decode.ts";
import type { BlockStored, VllmKvEvent, VllmKvEventBatch } from "../../protocol/kv-events/index.ts";
import type { RouterEvent } from "../../protocol/router-events.ts";
import { batchFault, PARENT_WINDOW, SlotResidency } from "./slot-residency.ts";

const BS = 4;
const flat = (batch: VllmKvEventBatch) => {
  const f = new FlatBatch();
  flatFromBatch(batch, f);
  return f;
};
const hasher = createBlockHasher();

function setup(parentWindow?: number) {
  const events: RouterEvent[] = [];
  const r = new SlotResidency({ cacheOwnerId: "owner" }, createBlockHasher(), (e) => events.push(e), { parentWindow });
  const apply = (...evs: VllmKvEvent[]) => r.applyBatch(flat({ ts: 0, events: evs, dataParallelRank: 0 }));
  return { r, events, apply };
}

function stored(raw: bigint[], tokens: number[], parent: bigint | null, medium: string | null = "GPU", ownership?: string): BlockStored {
  const e: BlockStored = { type: "BlockStored", blockHashes: raw, parentBlockHash: parent, tokenIds: tokens, blockSize: BS, loraId: null, medium, loraName: null };
  return ownership ? { ...e, ownership } : e;
}
const removed = (raw: bigint[], medium: string | null = "GPU", ownership?: string): VllmKvEvent =>
  ownership ? { type: "BlockRemoved", blockHashes: raw, medium, ownership } : { type: "BlockRemoved", blockHashes: raw, medium };
const tokens = (n: number, seed = 0) => Array.from({ length: n * BS }, (_, i) => (i * 7 + seed) % 50_000);

describe("SlotResidency normalization", () => {
  test("router hashes are the block hasher's from token ids, whatever the raw hashes (random, signed-looking, huge)", () => {
    const { r, events, apply } = setup();
    const t = tokens(3);
    const expected = hasher.hashBlocks(t, BS);
    apply(stored([0xdeadbeefn, 2n ** 64n - 1n], t.slice(0, 2 * BS), null), stored([17n], t.slice(2 * BS), 2n ** 64n - 1n));
    const device = r.snapshot().device;
    expect(device.map((b) => BigInt(b.seq_hash)).sort()).toEqual([...expected.sequence].sort());
    const localOf = new Map([...expected.sequence].map((h, i) => [h, expected.local[i]!]));
    expect(device.every((b) => BigInt(b.local_hash) === localOf.get(BigInt(b.seq_hash)))).toBe(true);
    expect(events.map((e) => [e.kind, e.blocks.length, e.parentHash])).toEqual([
      ["stored", 2, null],
      ["stored", 1, expected.sequence[1]!],
    ]);
    expect(events[0]!.blocks[1]).toEqual({ seqHash: expected.sequence[1]!, localHash: expected.local[1]! });
  });

  test("an unknown parent is an orphan, a bad token count or medium malformed: dropped, nothing changes", () => {
    const { r, events, apply } = setup();
    apply(stored([1n], tokens(1), 99n), stored([2n], tokens(1).slice(1), null), stored([3n], tokens(1), null, "NVRAM"));
    expect(r.counters).toMatchObject({ orphanStores: 1, malformedEvents: 2, blockOps: 0 });
    expect(events).toEqual([]);
  });

  test("framework residency is reference-counted per tier: removed goes out only when the last reference goes", () => {
    const { r, events, apply } = setup();
    apply(stored([1n], tokens(1), null), stored([1n], tokens(1), null), removed([1n]));
    expect(events.map((e) => e.kind)).toEqual(["stored"]);
    apply(removed([1n]), removed([1n]));
    expect(events.map((e) => e.kind)).toEqual(["stored", "removed"]);
    expect(r.counters.unknownRemovals).toBe(1);
  });

  test("kvcr (CacheOwner) and framework residency of one block are one router block per tier", () => {
    const { r, events, apply } = setup();
    apply(stored([1n], tokens(1), null, "CPU_PINNED"), stored([1n], tokens(1), null, "CPU", "kvcr"));
    expect(r.snapshot().host).toHaveLength(1);
    apply({ type: "AllBlocksCleared" });
    expect(r.snapshot().host).toHaveLength(1); // kvcr survives AllBlocksCleared
    apply(removed([1n], "CPU_PINNED", "kvcr"));
    expect(r.snapshot().host).toHaveLength(0);
    expect(events.map((e) => `${e.tier} ${e.kind}`)).toEqual(["host stored", "host removed"]);
  });

  test("AllBlocksCleared removes framework blocks of every tier", () => {
    const { r, events, apply } = setup();
    apply(stored([1n], tokens(1), null), stored([1n], tokens(1), null, "CPU"), stored([2n], tokens(1, 3), 1n, "DISK"));
    apply({ type: "AllBlocksCleared" });
    const s = r.snapshot();
    expect([s.device, s.host, s.disk].map((t) => t.length)).toEqual([0, 0, 0]);
    expect(events.filter((e) => e.kind === "removed").map((e) => e.tier).sort()).toEqual(["device", "disk", "host"]);
    // Each removal names its block's router hashes: block 1 on device and host, block 2 on disk.
    const one = hasher.hashBlocks(tokens(1), BS);
    const two = hasher.hashBlocks(tokens(1, 3), BS, one.sequence[0]!);
    const removedIn = (tier: string) => events.find((e) => e.kind === "removed" && e.tier === tier)!.blocks;
    expect(removedIn("device")).toEqual([{ seqHash: one.sequence[0]!, localHash: one.local[0]! }]);
    expect(removedIn("disk")).toEqual([{ seqHash: two.sequence[0]!, localHash: two.local[0]! }]);
  });

  test("a departed block stays a known parent for the last PARENT_WINDOW departures", () => {
    const { r, apply } = setup();
    apply(stored([1n], tokens(1), null), removed([1n]));
    apply(stored([2n], tokens(1, 1), 1n)); // parent 1 left, still known
    expect(r.counters.orphanStores).toBe(0);
    apply(removed([2n]));
    for (let i = 0; i < PARENT_WINDOW; i++) apply(stored([1000n + BigInt(i)], tokens(1, 2), null), removed([1000n + BigInt(i)]));
    apply(stored([3n], tokens(1, 4), 1n));
    expect(r.counters.orphanStores).toBe(1);
    expect(r.knownBlocks).toBeLessThanOrEqual(PARENT_WINDOW);
  });

  // W departures after its own, a departed block is forgotten: W − 1 keep it. The ring holding
  // them doubles from 64 and stops at W (also when W is no power of two, or below 64).
  // The default is a literal here: a test reading PARENT_WINDOW would follow a broken constant.
  test.each([16_384, 200, 3])("window %d: a parent is kept through W − 1 later departures, forgotten at the W-th; the ring grows to W", (w) => {
    const { r, apply } = setup(w === 16_384 ? undefined : w);
    const departures: number[] = [];
    let n = 0;
    const departOne = () => {
      const raw = 1000n + BigInt(n++);
      apply(stored([raw], tokens(1, 2), null), removed([raw]));
      departures.push(r.departureRingCapacity);
    };
    apply(stored([1n], tokens(1), null), removed([1n]));
    for (let i = 0; i < w - 1; i++) departOne();
    apply(stored([2n], tokens(1, 1), 1n)); // parent 1 is still known
    expect(r.counters.orphanStores).toBe(0);
    expect(r.knownBlocks).toBe(w + 1); // the W latest departures and block 2
    departOne();
    apply(stored([3n], tokens(1, 4), 1n)); // parent 1 is forgotten
    expect(r.counters.orphanStores).toBe(1);
    expect(r.knownBlocks).toBe(w + 1);
    const growth = [...new Set(departures)];
    const expected = [64];
    while (expected.at(-1)! < w) expected.push(Math.min(w, expected.at(-1)! * 2));
    expect(growth).toEqual(expected);
  });

  test("a removed block is named by its own router hashes (the second block of a chain)", () => {
    const { events, apply } = setup();
    const t = tokens(2);
    const expected = hasher.hashBlocks(t, BS);
    apply(stored([1n, 2n], t, null), removed([2n]));
    expect(events.at(-1)).toMatchObject({ kind: "removed", tier: "device", blocks: [{ seqHash: expected.sequence[1]!, localHash: expected.local[1]! }] });
  });

  test("after a reset the departure window starts again from its oldest slot (window 3)", () => {
    const { r, apply } = setup(3);
    apply(stored([900n], tokens(1, 9), null), removed([900n]));
    r.reset();
    apply(stored([1n], tokens(1), null), removed([1n]));
    apply(stored([1001n], tokens(1, 2), null), removed([1001n]));
    apply(stored([1002n], tokens(1, 3), null), removed([1002n]));
    apply(stored([2n], tokens(1, 1), 1n)); // block 1 is among the last 3 departures
    expect(r.counters.orphanStores).toBe(0);
    apply(stored([1003n], tokens(1, 5), null), removed([1003n])); // the 4th: block 1, the oldest, is forgotten
    apply(stored([3n], tokens(1, 4), 1n));
    expect(r.counters.orphanStores).toBe(1);
    apply(stored([4n], tokens(1, 6), 1001n)); // the second oldest is still known
    expect(r.counters.orphanStores).toBe(1);
  });

  test("reset emits a cleared barrier per tier and forgets everything", () => {
    const { r, events, apply } = setup();
    apply(stored([1n], tokens(1), null));
    r.reset();
    expect(events.slice(1).map((e) => `${e.tier} ${e.kind}`)).toEqual(["device cleared", "host cleared", "disk cleared"]);
    expect(r.snapshot().device).toEqual([]);
  });
});

describe("batchFault", () => {
  const batch = (events: VllmKvEvent[], rank: number | null = 0) => flat({ ts: 0, events, dataParallelRank: rank });
  test("names dp rank, unknown ownership and kvcr on device", () => {
    expect(batchFault(batch([], 1), 0)).toContain("data_parallel_rank 1");
    expect(batchFault(batch([], null), 3)).toBeUndefined();
    expect(batchFault(batch([stored([1n], tokens(1), null, "CPU", "someone")]), 0)).toContain('unknown ownership "someone"');
    expect(batchFault(batch([stored([1n], tokens(1), null, "GPU", "kvcr")]), 0)).toContain("device medium");
    expect(batchFault(batch([removed([1n], null, "kvcr")]), 0)).toContain("device medium");
    expect(batchFault(batch([stored([1n], tokens(1), null, "DISK", "kvcr")]), 0)).toBeUndefined();
  });
});
