import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { KvIndex } from "./kv-index.ts";
import { RankSet } from "./tier-index.ts";

const stored = (tier: "device" | "host", ...h: bigint[]) => ({ kind: "stored" as const, tier, blockHashes: h });
const removed = (tier: "device" | "host", ...h: bigint[]) => ({ kind: "removed" as const, tier, blockHashes: h });

describe("kv index", () => {
  test("longest device prefix per rank, host continuation after it", () => {
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

  test("ranks are independent", () => {
    const ix = new KvIndex();
    ix.apply(0, stored("device", 1n));
    ix.apply(1, stored("device", 1n));
    ix.apply(0, removed("device", 1n));
    const out = new Int32Array(2);
    ix.deviceOverlaps([1n], 1, [0, 1], out);
    expect([...out]).toEqual([0, 1]);
  });
});

describe("kv index against a reference model (fast-check)", () => {
  // Small hash pool so stores, removals of absent blocks and shared prefixes all happen.
  const hashArb = fc.oneof(fc.bigInt({ min: 1n, max: 12n }), fc.constantFrom(2n ** 63n + 5n, 2n ** 64n - 1n));
  const eventArb = fc.record({
    rankId: fc.integer({ min: 0, max: 3 }),
    kind: fc.constantFrom("stored" as const, "stored" as const, "removed" as const, "cleared" as const, "clearTier" as const),
    tier: fc.constantFrom("device" as const, "host" as const, "disk" as const),
    hashes: fc.array(hashArb, { maxLength: 6 }),
  });

  test("overlaps, host continuations, footprints and unknown removals match plain sets", () => {
    fc.assert(
      fc.property(fc.array(eventArb, { maxLength: 60 }), fc.array(fc.array(hashArb, { maxLength: 8 }), { minLength: 1, maxLength: 5 }), (events, queries) => {
        const ix = new KvIndex();
        const ref = new Map<string, Set<bigint>>();
        const set = (s: number, t: string) => ref.get(`${s}/${t}`) ?? ref.set(`${s}/${t}`, new Set()).get(`${s}/${t}`)!;
        let unknown = 0;
        for (const e of events) {
          if (e.kind === "cleared") {
            ix.apply(e.rankId, { kind: "cleared" });
            set(e.rankId, "device").clear();
            set(e.rankId, "host").clear();
            set(e.rankId, "disk").clear();
          } else if (e.kind === "clearTier") {
            ix.apply(e.rankId, { kind: "cleared", tier: e.tier });
            set(e.rankId, e.tier).clear();
          } else {
            ix.apply(e.rankId, { kind: e.kind, tier: e.tier, blockHashes: e.hashes });
            for (const h of e.hashes) {
              if (e.kind === "stored") set(e.rankId, e.tier).add(h);
              else if (!set(e.rankId, e.tier).delete(h)) unknown++;
            }
          }
        }
        expect(ix.unknownRemovals).toBe(unknown);
        const candidates = [3, 0, 2, 1];
        for (const q of queries) {
          const out = new Int32Array(4);
          // Both query shapes: a plain array and the BigUint64Array the simulator passes.
          ix.deviceOverlaps(q, q.length, candidates, out);
          const viaTyped = new Int32Array(4);
          ix.deviceOverlaps(BigUint64Array.from(q), q.length, candidates, viaTyped);
          expect([...viaTyped]).toEqual([...out]);
          candidates.forEach((s, c) => {
            let d = 0;
            while (d < q.length && set(s, "device").has(q[d]!)) d++;
            expect(out[c]).toBe(d);
            let h = d;
            while (h < q.length && set(s, "host").has(q[h]!)) h++;
            expect(ix.hostContinuation(s, q, d, q.length)).toBe(h - d);
          });
          // The inverted walk the router uses gives the same device prefix, host and disk continuations.
          const [dev, host, disk] = [new Int32Array(4), new Int32Array(4), new Int32Array(4)];
          ix.overlaps(q, q.length, candidates, dev, host, disk);
          candidates.forEach((s, c) => {
            let d = 0;
            while (d < q.length && set(s, "device").has(q[d]!)) d++;
            let h = d;
            while (h < q.length && set(s, "host").has(q[h]!)) h++;
            let k = h;
            while (k < q.length && set(s, "disk").has(q[k]!)) k++;
            expect([dev[c], host[c], disk[c]]).toEqual([d, h - d, k - h]);
          });
        }
        for (const t of ["device", "host", "disk"] as const) expect(ix.size(t)).toBe([0, 1, 2, 3].reduce((n, x) => n + set(x, t).size, 0));
        for (const s of [0, 1, 2, 3]) {
          for (const t of ["device", "host", "disk"] as const) {
            expect(ix.footprint(s, t)).toBe(set(s, t).size);
            expect(new Set(ix.blocksOf(s, t))).toEqual(set(s, t));
          }
        }
      }),
      { numRuns: 300, seed: 17 },
    );
  });

  test("a walk with a cover gives every cover rank max(device, floor) = its prefix, whoever holds block 0", () => {
    const deviceEvent = fc.record({ rankId: fc.integer({ min: 0, max: 3 }), kind: fc.constantFrom("stored" as const, "stored" as const, "removed" as const), hashes: fc.array(hashArb, { maxLength: 6 }) });
    fc.assert(
      fc.property(fc.array(deviceEvent, { maxLength: 40 }), fc.array(fc.array(hashArb, { maxLength: 8 }), { minLength: 1, maxLength: 5 }), fc.boolean(), (events, queries, exact) => {
        const ix = new KvIndex();
        const ref = [0, 1, 2, 3].map(() => new Set<bigint>());
        for (const e of events) {
          ix.apply(e.rankId, { kind: e.kind, tier: "device", blockHashes: e.hashes });
          for (const h of e.hashes) e.kind === "stored" ? ref[e.rankId]!.add(h) : ref[e.rankId]!.delete(h);
        }
        for (const q of queries) {
          // The cover is block 0's holders exactly (the fast case) or every rank.
          const members = [0, 1, 2, 3].filter((s) => !exact || (q.length > 0 && ref[s]!.has(q[0]!)));
          const cover = new RankSet();
          for (const s of members) cover.add(s);
          const ov = ix.beginOverlaps(q, q.length, cover);
          for (const s of members) {
            let d = 0;
            while (d < q.length && ref[s]!.has(q[d]!)) d++;
            expect(Math.max(ov.device[s]!, ov.floor)).toBe(d);
          }
          ix.endOverlaps();
          // Cleared for the next query, read without a cover.
          const plain = ix.beginOverlaps(q, q.length);
          for (const s of [0, 1, 2, 3]) {
            let d = 0;
            while (d < q.length && ref[s]!.has(q[d]!)) d++;
            expect([plain.device[s], plain.floor]).toEqual([d, 0]);
          }
          ix.endOverlaps();
        }
      }),
      { numRuns: 300, seed: 23 },
    );
  });
});

describe("kv index next-block hints (fast-check)", () => {
  // Chains over a small pool: blocks are stored with their parent (so stores link them), removed
  // and re-stored (so list ids are closed and reused under old hints), and walked between
  // changes (so walks leave hints that later changes make stale).
  const chainArb = fc.array(fc.bigInt({ min: 1n, max: 9n }), { minLength: 1, maxLength: 7 });
  const stepArb = fc.record({
    rankId: fc.integer({ min: 0, max: 2 }),
    op: fc.constantFrom("store" as const, "store" as const, "remove" as const, "walk" as const, "clear" as const),
    chain: chainArb,
    from: fc.integer({ min: 0, max: 6 }),
  });

  test("walks interleaved with chained stores, removals and clears match plain sets", () => {
    fc.assert(
      fc.property(fc.array(stepArb, { maxLength: 80 }), (steps) => {
        const ix = new KvIndex();
        const ref = [0, 1, 2].map(() => new Set<bigint>());
        const cover = new RankSet();
        for (const s of [0, 1, 2]) cover.add(s);
        const check = (q: bigint[]) => {
          const ov = ix.beginOverlaps(q, q.length, cover);
          for (const s of [0, 1, 2]) {
            let d = 0;
            while (d < q.length && ref[s]!.has(q[d]!)) d++;
            expect(Math.max(ov.device[s]!, ov.floor)).toBe(d);
          }
          ix.endOverlaps();
        };
        for (const st of steps) {
          const from = Math.min(st.from, st.chain.length - 1);
          const part = st.chain.slice(from);
          if (st.op === "store") {
            const parentHash = from > 0 ? st.chain[from - 1]! : null;
            ix.apply(st.rankId, { kind: "stored", tier: "device", blockHashes: part, parentHash });
            // An orphan (parent not held) is dropped whole.
            if (parentHash === null || ref[st.rankId]!.has(parentHash)) for (const h of part) ref[st.rankId]!.add(h);
          } else if (st.op === "remove") {
            ix.apply(st.rankId, { kind: "removed", tier: "device", blockHashes: part });
            for (const h of part) ref[st.rankId]!.delete(h);
          } else if (st.op === "clear") {
            ix.apply(st.rankId, { kind: "cleared" });
            ref[st.rankId]!.clear();
          }
          check(st.chain);
          check(part);
        }
      }),
      { numRuns: 400, seed: 41 },
    );
  });
});

describe("kv index edges", () => {
  test("a stored event chains from its own parent, also when that is not the last block stored", () => {
    const ix = new KvIndex();
    ix.apply(0, { kind: "stored", tier: "device", blockHashes: [1n, 2n, 3n] });
    ix.apply(0, { kind: "stored", tier: "device", blockHashes: [5n, 6n], parentHash: 1n }); // a branch off block 1
    const out = new Int32Array(1);
    ix.deviceOverlaps([1n, 5n, 6n], 3, [0], out);
    expect(out[0]).toBe(3);
    const dev = new Int32Array(1);
    ix.overlaps([1n, 5n, 6n], 3, [0], dev, new Int32Array(1), new Int32Array(1));
    expect(dev[0]).toBe(3);
  });

  test("rank ids far past the initial capacity are held and read like small ones", () => {
    const ix = new KvIndex();
    for (const r of [0, 64, 200, 1000]) ix.applyAll(r, [stored("device", 1n, 2n), stored("host", 3n)]);
    const device = new Int32Array(4);
    const host = new Int32Array(4);
    ix.overlaps([1n, 2n, 3n], 3, [0, 64, 200, 1000], device, host, new Int32Array(4));
    expect([...device]).toEqual([2, 2, 2, 2]);
    expect([...host]).toEqual([1, 1, 1, 1]);
    expect(ix.footprint(1000)).toBe(2);
  });

  test("overlaps writes one entry per candidate and nothing past them", () => {
    const ix = new KvIndex();
    ix.applyAll(0, [stored("device", 1n)]);
    const device = new Int32Array(3).fill(-7);
    const host = new Int32Array(3).fill(-7);
    const disk = new Int32Array(3).fill(-7);
    ix.overlaps([1n], 1, [0, 5], device, host, disk);
    expect([[...device], [...host], [...disk]]).toEqual([[1, 0, -7], [0, 0, -7], [0, 0, -7]]);
  });
});

describe("RankSet", () => {
  test("members past its first 64 are held; size counts each once", () => {
    const s = new RankSet();
    for (const r of [63, 64, 64, 65, 300]) s.add(r);
    expect([63, 64, 65, 300, 66].map((r) => s.has(r))).toEqual([true, true, true, true, false]);
    expect(s.size).toBe(4);
    s.delete(64);
    expect([s.has(64), s.size]).toEqual([false, 3]);
  });

  test("the fingerprint is the set's: the same members in any order, and back to empty after deleting them", () => {
    const a = new RankSet();
    const b = new RankSet();
    for (const r of [1, 2, 3]) a.add(r);
    for (const r of [3, 1, 2]) b.add(r);
    expect([a.fpA, a.fpB]).toEqual([b.fpA, b.fpB]);
    for (const r of [1, 2, 3]) a.delete(r);
    expect([a.fpA, a.fpB, a.size]).toEqual([0, 0, 0]);
  });
});
