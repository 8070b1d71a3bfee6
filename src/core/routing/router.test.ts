import { describe, expect, test } from "bun:test";
import { createBlockHasher } from "../../lib/xxh3.ts";
import { ROUTING_CASES, TABLE_BLOCK_SIZE } from "../../../test/routing/decision-table.ts";
import { KvIndex } from "../index/kv-index.ts";
import { createRng } from "../random/rng.ts";
import { longerPrefixSource } from "./hints.ts";
import { DISK_OVERLAP_WEIGHT, HOST_OVERLAP_WEIGHT, kvCost } from "./kv-cost.ts";
import { Router } from "./router.ts";
import { selectByCost } from "./worker-selection.ts";

const kvOpts = { mode: "kv" as const, prefillLoadScale: 1, temperature: 0 };

function routerWith(n: number, ix: KvIndex, opts: ConstructorParameters<typeof Router>[0] = kvOpts, capacity = 100): Router {
  const r = new Router(opts, createRng(0), ix);
  for (let s = 0; s < n; s++) r.add(s, capacity);
  return r;
}

describe("kv cost (SPEC §6.3)", () => {
  test("prefill blocks after device, 0.75 × host and 0.25 × disk overlap, plus decode blocks", () => {
    expect(HOST_OVERLAP_WEIGHT).toBe(0.75);
    expect(DISK_OVERLAP_WEIGHT).toBe(0.25);
    expect(kvCost(10, 4, 4, 7, 1)).toBe(10 - 4 - 3 + 7);
    expect(kvCost(10, 4, 4, 7, 2)).toBe(2 * 3 + 7);
    expect(kvCost(10, 4, 0, 0, 1, 4)).toBe(5);
    expect(kvCost(10, 4, 4, 0, 1, 0, { host: 0.5, disk: 0 })).toBe(4);
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

describe("router", () => {
  const q = { seqHashes: [], promptBlocks: 1 };

  test("round-robin cycles; random stays in range; no candidates → undefined", () => {
    const rr = routerWith(3, new KvIndex(), { mode: "round-robin" });
    expect([0, 1, 2, 3].map(() => rr.route(q)!.source)).toEqual([0, 1, 2, 0]);
    const rnd = routerWith(3, new KvIndex(), { mode: "random" });
    expect(new Set(Array.from({ length: 100 }, () => rnd.route(q)!.source))).toEqual(new Set([0, 1, 2]));
    expect(new Router({ mode: "kv" }, createRng(0), new KvIndex()).route(q)).toBeUndefined();
  });

  test("candidates come and go: a removed one is never picked, its load forgotten", () => {
    const r = routerWith(3, new KvIndex(), { mode: "round-robin" });
    r.remove(1);
    expect(r.has(1)).toBe(false);
    expect(new Set(Array.from({ length: 10 }, () => r.route(q)!.source))).toEqual(new Set([0, 2]));
    r.add(7, 10);
    expect(new Set(Array.from({ length: 9 }, () => r.route(q)!.source))).toEqual(new Set([0, 2, 7]));
    r.remove(7);
    expect(r.activeBlocksOf(7)).toBe(0);
    r.release(7, 5); // a late release for a removed candidate does nothing
  });

  test("kv: prefers the worker holding the prefix, until its decode load outweighs it", () => {
    const ix = new KvIndex();
    ix.apply(1, { kind: "stored", tier: "device", blockHashes: [1n, 2n, 3n] });
    const r = routerWith(2, ix);
    const kq = { seqHashes: [1n, 2n, 3n, 4n], promptBlocks: 5 };
    expect(r.route(kq)).toEqual({ source: 1, cost: 2, deviceOverlap: 3, hostOverlap: 0, diskOverlap: 0 });
    // Source 1 now carries 5 active blocks: cost 2 + 5 = 7 > source 0's 5.
    expect(r.route(kq)!.source).toBe(0);
    r.release(1, 5);
    expect(r.activeBlocksOf(1)).toBe(0);
    expect(r.route(kq)!.source).toBe(1);
  });

  test("kv: busy candidates are skipped while others are below the threshold", () => {
    const ix = new KvIndex();
    ix.apply(0, { kind: "stored", tier: "device", blockHashes: [1n, 2n] });
    const r = routerWith(2, ix, { ...kvOpts, prefillLoadScale: 10, busyThreshold: 0.5 }, 10);
    const kq = { seqHashes: [1n, 2n], promptBlocks: 6 };
    expect(r.route(kq)!.source).toBe(0); // 6 active blocks > 0.5 × 10 now
    expect(r.route(kq)!.source).toBe(1); // despite source 0's much lower prefill cost
    expect(r.route(kq)!.source).toBe(0); // both busy: all candidates again, source 0 cheapest
  });

  test("kv: equal costs spread over the candidates", () => {
    const r = routerWith(4, new KvIndex());
    const seen = new Set<number>();
    for (let i = 0; i < 40; i++) {
      const d = r.route({ seqHashes: [9n], promptBlocks: 1 })!;
      seen.add(d.source);
      r.release(d.source, 1);
    }
    expect(seen).toEqual(new Set([0, 1, 2, 3]));
  });

  test("a cleared router event clears one tier; an engine cleared clears all", () => {
    const ix = new KvIndex();
    ix.apply(0, { kind: "stored", tier: "device", blockHashes: [1n] });
    ix.apply(0, { kind: "stored", tier: "host", blockHashes: [2n] });
    ix.apply(0, { kind: "cleared", tier: "host" });
    expect([ix.footprint(0, "device"), ix.footprint(0, "host")]).toEqual([1, 0]);
    ix.apply(0, { kind: "cleared" });
    expect(ix.footprint(0, "device")).toBe(0);
  });
});

describe("the shared decision table (same cases run through the frontend)", () => {
  const hasher = createBlockHasher();
  for (const c of ROUTING_CASES) {
    test(c.name, () => {
      const tokens = Uint32Array.from({ length: 16 * TABLE_BLOCK_SIZE }, (_, i) => 1000 + i);
      const seq = hasher.hashBlocks(tokens, TABLE_BLOCK_SIZE).sequence;
      const ix = new KvIndex();
      for (const h of c.holdings) ix.apply(h.worker * c.ranks + h.rank, { kind: "stored", tier: h.tier, blockHashes: [...seq.subarray(h.from, h.to)] });
      const r = routerWith(c.workers * c.ranks, ix);
      const d = r.route({ seqHashes: seq.subarray(0, c.promptBlocks), promptBlocks: c.promptBlocks })!;
      expect({ worker: Math.floor(d.source / c.ranks), rank: d.source % c.ranks }).toEqual(c.expect);
    });
  }
});

describe("router hints (SPEC §6.4)", () => {
  test("a source with a strictly longer local prefix (device + host), the longest first", () => {
    const ix = new KvIndex();
    ix.apply(1, { kind: "stored", tier: "device", blockHashes: [1n, 2n] });
    ix.apply(2, { kind: "stored", tier: "device", blockHashes: [1n] });
    ix.apply(2, { kind: "stored", tier: "host", blockHashes: [2n, 3n] });
    const seq = [1n, 2n, 3n, 4n];
    expect(longerPrefixSource(ix, seq, 2, [1, 2])).toEqual({ source: 2, blocks: 3 });
    expect(longerPrefixSource(ix, seq, 3, [1, 2])).toBeUndefined(); // equal is not longer
    expect(longerPrefixSource(ix, seq, 0, [])).toBeUndefined();
  });
});
