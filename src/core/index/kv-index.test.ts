import { describe, expect, test } from "bun:test";
import { KvIndex } from "./kv-index.ts";

const stored = (tier: "device" | "host", ...h: bigint[]) => ({ kind: "stored" as const, tier, blockHashes: h });
const removed = (tier: "device" | "host", ...h: bigint[]) => ({ kind: "removed" as const, tier, blockHashes: h });

describe("kv index", () => {
  test("longest device prefix per source, host continuation after it", () => {
    const ix = new KvIndex();
    ix.applyAll(0, [stored("device", 1n, 2n, 3n)]);
    ix.applyAll(1, [stored("device", 1n), stored("host", 2n, 3n, 4n)]);
    ix.applyAll(2, [stored("device", 2n, 3n)]); // no block 0: no prefix at all
    const out = new Int32Array(3);
    const q = [1n, 2n, 3n, 4n];
    ix.deviceOverlaps(q, 4, [0, 1, 2], out);
    expect([...out]).toEqual([3, 1, 0]);
    expect(ix.hostContinuation(1, q, 1, 4)).toBe(3);
    expect(ix.hostContinuation(0, q, 3, 4)).toBe(0);
    expect(ix.footprint(0)).toBe(3);
    expect(ix.footprint(1, "host")).toBe(3);
  });

  test("removals and cleared events update the view", () => {
    const ix = new KvIndex();
    ix.apply(0, stored("device", 1n, 2n));
    ix.apply(0, removed("device", 2n));
    const out = new Int32Array(1);
    ix.deviceOverlaps([1n, 2n], 2, [0], out);
    expect(out[0]).toBe(1);
    ix.apply(0, removed("device", 9n));
    expect(ix.unknownRemovals).toBe(1);
    ix.apply(0, { kind: "cleared" });
    ix.deviceOverlaps([1n, 2n], 2, [0], out);
    expect(out[0]).toBe(0);
    expect(ix.footprint(0)).toBe(0);
  });

  test("sources are independent", () => {
    const ix = new KvIndex();
    ix.apply(0, stored("device", 1n));
    ix.apply(1, stored("device", 1n));
    ix.apply(0, removed("device", 1n));
    const out = new Int32Array(2);
    ix.deviceOverlaps([1n], 1, [0, 1], out);
    expect([...out]).toEqual([0, 1]);
  });
});
