import { describe, expect, test } from "bun:test";
import { KvIndex } from "../index/kv-index.ts";
import { createRng } from "../random/rng.ts";
import { HOST_OVERLAP_WEIGHT, kvCost } from "./kv-cost.ts";
import { createRouter, KvRouter } from "./router.ts";
import { selectByCost } from "./worker-selection.ts";

describe("kv cost (SPEC §6.3)", () => {
  test("prefill blocks after device and 0.75 × host overlap, plus decode blocks", () => {
    expect(HOST_OVERLAP_WEIGHT).toBe(0.75);
    expect(kvCost(10, 4, 4, 7, 1)).toBe(10 - 4 - 3 + 7);
    expect(kvCost(10, 4, 4, 7, 2)).toBe(2 * 3 + 7);
    expect(kvCost(4, 4, 4, 1, 1)).toBe(1); // never negative prefill
  });
});

describe("worker selection", () => {
  test("lowest cost wins; ties go to the smaller footprint, then at random", () => {
    const rng = createRng(1);
    expect(selectByCost([5, 3, 4], [0, 0, 0], 3, rng)).toBe(1);
    expect(selectByCost([3, 3, 4], [9, 2, 0], 3, rng)).toBe(1);
    const picks = new Set<number>();
    for (let i = 0; i < 200; i++) picks.add(selectByCost([3, 3, 3], [1, 1, 1], 3, rng));
    expect(picks).toEqual(new Set([0, 1, 2]));
  });

  test("temperature samples every candidate, favouring low cost", () => {
    const rng = createRng(2);
    const counts = [0, 0];
    for (let i = 0; i < 2000; i++) counts[selectByCost([0, 10], [0, 0], 2, rng, 0.5)]!++;
    expect(counts[0]!).toBeGreaterThan(counts[1]!);
    expect(counts[1]!).toBeGreaterThan(0);
  });
});

describe("routers", () => {
  test("round-robin cycles; random stays in range", () => {
    const rr = createRouter("round-robin", 3, createRng(0));
    expect([0, 1, 2, 3].map(() => rr.route({ seqHashes: [], promptBlocks: 1 }).worker)).toEqual([0, 1, 2, 0]);
    const rnd = createRouter("random", 3, createRng(0));
    const seen = new Set(Array.from({ length: 100 }, () => rnd.route({ seqHashes: [], promptBlocks: 1 }).worker));
    expect(seen).toEqual(new Set([0, 1, 2]));
  });

  test("kv: prefers the worker holding the prefix, until its decode load outweighs it", () => {
    const ix = new KvIndex();
    ix.apply(1, { kind: "stored", tier: "device", blockHashes: [1n, 2n, 3n] });
    const r = new KvRouter(2, ix, createRng(0), { prefillLoadScale: 1, temperature: 0, blocksPerWorker: 100 });
    const q = { seqHashes: [1n, 2n, 3n, 4n], promptBlocks: 5 };
    expect(r.route(q)).toEqual({ worker: 1, cost: 2, deviceOverlap: 3, hostOverlap: 0 });
    // Worker 1 now carries 5 active blocks: cost 2 + 5 = 7 > worker 0's 5.
    expect(r.route(q).worker).toBe(0);
    r.release(1, 5);
    expect(r.activeBlocksOf(1)).toBe(0);
    expect(r.route(q).worker).toBe(1);
  });

  test("kv: a host continuation counts at 0.75", () => {
    const ix = new KvIndex();
    ix.apply(0, { kind: "stored", tier: "device", blockHashes: [1n] });
    ix.apply(0, { kind: "stored", tier: "host", blockHashes: [2n, 3n, 4n] });
    ix.apply(1, { kind: "stored", tier: "device", blockHashes: [1n, 2n, 3n] });
    const r = new KvRouter(2, ix, createRng(0), { prefillLoadScale: 1, temperature: 0, blocksPerWorker: 100 });
    // worker 0: 4 − 1 − 0.75 × 3 = 0.75; worker 1: 4 − 3 = 1.
    expect(r.route({ seqHashes: [1n, 2n, 3n, 4n], promptBlocks: 4 })).toEqual({ worker: 0, cost: 0.75, deviceOverlap: 1, hostOverlap: 3 });
  });

  test("kv: busy workers are skipped while others are below the threshold", () => {
    const ix = new KvIndex();
    ix.apply(0, { kind: "stored", tier: "device", blockHashes: [1n, 2n] });
    const r = new KvRouter(2, ix, createRng(0), { prefillLoadScale: 10, temperature: 0, busyThreshold: 0.5, blocksPerWorker: 10 });
    const q = { seqHashes: [1n, 2n], promptBlocks: 6 };
    expect(r.route(q).worker).toBe(0); // 6 active blocks > 0.5 × 10 now
    expect(r.route(q).worker).toBe(1); // despite worker 0's much lower prefill cost
    expect(r.route(q).worker).toBe(0); // both busy: all candidates again, worker 0 cheapest
  });
});
