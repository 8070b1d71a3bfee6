import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { SPLIT, splitU64, U64Map, wordsOf } from "./u64-map.ts";

// Keys from small pools, so a run holds tens of live keys sharing probe runs and re-inserts
// deleted ones: sequential small keys, and full-width pseudo-random ones (like real hashes).
// (An arithmetic sequence would not do: Fibonacci hashing spreads those without a collision.)
const wide = Array.from({ length: 64 }, (_, i) => splitmix64(BigInt(i)));
const keyArb = fc.oneof(fc.bigInt({ min: 0n, max: 40n }), fc.constantFrom(...wide), fc.constantFrom(2n ** 32n, 2n ** 32n + 1n, 2n ** 64n - 1n, 1n << 63n));
// Clears are rare so maps fill up to tens of keys between them.
const opArb = fc.oneof(
  { weight: 10, arbitrary: fc.record({ op: fc.constant("set" as const), key: keyArb, value: fc.integer({ min: 0, max: 1 << 30 }) }) },
  { weight: 10, arbitrary: fc.record({ op: fc.constant("add" as const), key: keyArb, value: fc.integer({ min: 0, max: 1 << 30 }) }) },
  { weight: 8, arbitrary: fc.record({ op: fc.constant("delete" as const), key: keyArb }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("clear" as const) }) },
);

function splitmix64(seed: bigint): bigint {
  const M = 2n ** 64n - 1n;
  let z = (seed * 0x9e37_79b9_7f4a_7c15n) & M;
  z = ((z ^ (z >> 30n)) * 0xbf58_476d_1ce4_e5b9n) & M;
  z = ((z ^ (z >> 27n)) * 0x94d0_49bb_1331_11ebn) & M;
  return z ^ (z >> 31n);
}

describe("U64Map", () => {
  test("behaves like Map<bigint, number> under random inserts, deletes and clears", () => {
    fc.assert(
      fc.property(fc.array(opArb, { maxLength: 400 }), (ops) => {
        const m = new U64Map();
        const ref = new Map<bigint, number>();
        for (const o of ops) {
          if (o.op === "set") {
            splitU64(o.key);
            m.set(SPLIT[0]!, SPLIT[1]!, o.value);
            ref.set(o.key, o.value);
          } else if (o.op === "add") {
            expect(m.setIfAbsentBig(o.key, o.value)).toBe(!ref.has(o.key));
            if (!ref.has(o.key)) ref.set(o.key, o.value);
          } else if (o.op === "delete") {
            expect(m.deleteBig(o.key)).toBe(ref.get(o.key) ?? -1);
            ref.delete(o.key);
          } else {
            m.clear();
            ref.clear();
          }
          expect(m.size).toBe(ref.size);
        }
        // Every key present is found, every removed one is not, and iteration lists exactly them.
        for (const [k, v] of ref) expect(m.getBig(k)).toBe(v);
        for (const k of [...wide, ...Array.from({ length: 41 }, (_, i) => BigInt(i))]) expect(m.hasBig(k)).toBe(ref.has(k));
        expect(new Set(m.keyList())).toEqual(new Set(ref.keys()));
      }),
      { numRuns: 300, seed: 11 },
    );
  });

  test("grows past its initial capacity and shrinks back on clear", () => {
    const m = new U64Map();
    for (let i = 0n; i < 5000n; i++) expect(m.setIfAbsentBig(i * 0x1_0000_0001n, Number(i))).toBe(true);
    expect(m.size).toBe(5000);
    for (let i = 0n; i < 5000n; i += 2n) expect(m.deleteBig(i * 0x1_0000_0001n)).toBe(Number(i));
    for (let i = 0n; i < 5000n; i++) expect(m.getBig(i * 0x1_0000_0001n)).toBe(i % 2n === 0n ? -1 : Number(i));
    m.clear();
    expect(m.size).toBe(0);
    expect(m.keyList()).toEqual([]);
  });

  test("words of a BigUint64Array address the same keys as splitU64", () => {
    const hashes = BigUint64Array.from([0xdead_beef_0000_0001n, 7n, 2n ** 64n - 2n]);
    const w = wordsOf(hashes.subarray(1));
    const m = new U64Map();
    m.set(w[0]!, w[1]!, 1);
    m.set(w[2]!, w[3]!, 2);
    expect(m.getBig(7n)).toBe(1);
    expect(m.getBig(2n ** 64n - 2n)).toBe(2);
    expect(m.getBig(0xdead_beef_0000_0001n)).toBe(-1);
  });
});

describe("U64Map counters", () => {
  // Keys with non-zero words in both halves, many of them: neighbouring buckets are full.
  const key = (i: number) => [(i * 2654435761) | 1, (i * 40503 + 7) | 0x100] as const;

  test("increment, decrement and forEachWords agree with a Map<number, number>", () => {
    const m = new U64Map();
    const model = new Map<number, number>();
    for (let i = 0; i < 500; i++) for (let k = 0; k <= i % 3; k++) {
      const [w0, w1] = key(i);
      const v = m.increment(w0, w1);
      model.set(i, (model.get(i) ?? 0) + 1);
      expect(v).toBe(model.get(i)!);
    }
    for (let i = 0; i < 500; i += 2) {
      const [w0, w1] = key(i);
      const left = model.get(i)! - 1;
      expect(m.decrement(w0, w1)).toBe(left);
      if (left === 0) model.delete(i);
      else model.set(i, left);
    }
    expect(m.decrement(1, 1)).toBe(-1); // absent
    for (const [i, v] of model) expect(m.get(...key(i))).toBe(v);
    const seen = new Map<string, number>();
    m.forEachWords((w0, w1, v) => seen.set(`${w0},${w1}`, v));
    expect(seen).toEqual(new Map([...model].map(([i, v]) => [`${key(i)[0] >>> 0},${key(i)[1] >>> 0}`, v])));
  });
});
