import { describe, expect, test } from "bun:test";
import { engine, residencyMismatch, runToIdle, seq } from "../../../test/engine-kit.ts";
import { HostTier } from "./host-tier.ts";
import { SPLIT, splitU64 } from "./u64-map.ts";

const resident = (t: HostTier, h: bigint) => {
  splitU64(h);
  return t.residentCell(SPLIT[0]!, SPLIT[1]!);
};

/** Reserves and lands `hash`; returns what the reservation evicted. */
function store(t: HostTier, hash: bigint): bigint[] {
  const evicted: bigint[] = [];
  const cell = t.reserve(hash, evicted);
  expect(cell).toBeGreaterThanOrEqual(0);
  t.land(cell);
  return evicted;
}

describe("G2 host tier storage", () => {
  test("a huge capacity allocates nothing up front", () => {
    const t = new HostTier(2 ** 31 - 1);
    expect(t.allocatedCells).toBeLessThanOrEqual(64);
  });

  test("with a huge capacity, storage follows the blocks stored", () => {
    const t = new HostTier(2 ** 31 - 1);
    for (let h = 1n; h <= 1000n; h++) expect(store(t, h)).toEqual([]);
    expect(t.usedBlocks).toBe(1000);
    expect(t.allocatedCells).toBeGreaterThanOrEqual(1000);
    expect(t.allocatedCells).toBeLessThan(2048);
    for (let h = 1n; h <= 1000n; h++) expect(resident(t, h)).not.toBe(-1);
    expect(new Set(t.residentHashes())).toEqual(new Set(Array.from({ length: 1000 }, (_, i) => BigInt(i + 1))));
  });

  test("growth stops at the capacity and LRU eviction takes over across the growth boundary", () => {
    const t = new HostTier(100);
    for (let h = 1n; h <= 100n; h++) expect(store(t, h)).toEqual([]);
    expect(t.allocatedCells).toBe(100);
    // Full: the least recently landed entries go first, pinned ones are skipped.
    splitU64(1n);
    t.pin(t.residentCell(SPLIT[0]!, SPLIT[1]!));
    expect(store(t, 101n)).toEqual([2n]);
    expect(store(t, 102n)).toEqual([3n]);
    expect(t.usedBlocks).toBe(100);
    expect(resident(t, 1n)).not.toBe(-1);
    expect(resident(t, 2n)).toBe(-1);
    expect(t.allocatedCells).toBe(100);
  });

  test("a pending entry dropped frees its cell for the next reservation", () => {
    const t = new HostTier(2);
    const evicted: bigint[] = [];
    const a = t.reserve(7n, evicted);
    expect(t.has(7n)).toBe(true);
    expect(resident(t, 7n)).toBe(-1); // pending: not visible to lookups
    t.dropPending(a);
    expect(t.has(7n)).toBe(false);
    expect(t.usedBlocks).toBe(0);
    expect(t.reserve(8n, evicted)).toBe(a);
    expect(evicted).toEqual([]);
  });

  test("an engine with a 2^31 − 1 block host tier offloads and reloads like a small one", () => {
    const run = (numHostBlocks: number) => {
      const e = engine({ blockSize: 4, numGpuBlocks: 4, numHostBlocks, kvBytesPerToken: 1, timingModel: "fixed", prefillMs: 1, decodeMs: 1 });
      e.addRequest({ id: "a", tokenIds: seq(0, 12), maxTokens: 1 });
      const a = runToIdle(e);
      e.addRequest({ id: "b", tokenIds: seq(100, 16), maxTokens: 1 });
      const b = runToIdle(e, a.nowMs);
      e.addRequest({ id: "c", tokenIds: seq(0, 13), maxTokens: 1 });
      const c = runToIdle(e, b.nowMs);
      expect(residencyMismatch(e, [...a.events, ...b.events, ...c.events])).toBeUndefined();
      return c.steps.flatMap((s) => s.finished)[0];
    };
    expect(run(2 ** 31 - 1)).toEqual(run(64));
    expect(run(2 ** 31 - 1)).toMatchObject({ cachedTokens: 12, hostLoadedTokens: 12 });
  });
});

describe("host tier entry states", () => {
  test("reserved is pending, landed is resident, a dropped pending entry is neither", () => {
    const t = new HostTier(4);
    const a = t.reserve(11n, []);
    const b = t.reserve(12n, []);
    expect([t.isPending(a), t.isResident(a)]).toEqual([true, false]);
    t.land(a);
    expect([t.isPending(a), t.isResident(a)]).toEqual([false, true]);
    t.dropPending(b);
    expect([t.isPending(b), t.isResident(b)]).toEqual([false, false]);
  });
});
