import { describe, expect, test } from "bun:test";
import { createBlockHasher } from "../../lib/xxh3.ts";
import { placeAdapters } from "./lora-placement.ts";

const hasher = createBlockHasher();
const score = (a: string, w: number) => hasher.localHash(Uint32Array.of(w), hasher.seedOf(a));

describe("rendezvous placement of LoRA adapters", () => {
  test("the `replicas` highest-scoring workers, against a sort of hand-made scores; ties to the lower worker", () => {
    const table: Record<string, number[]> = { a: [5, 9, 1, 7, 3], b: [2, 2, 8, 2, 0], c: [4, 4, 4, 4, 4], d: [0, 1, 2, 3, 4] };
    const byTable = (a: string, w: number) => BigInt(table[a]![w]!);
    const naive = (a: string, k: number) => [...table[a]!.keys()].sort((x, y) => table[a]![y]! - table[a]![x]! || x - y).slice(0, k).sort((x, y) => x - y);
    for (const k of [1, 2, 3]) {
      const p = placeAdapters(Object.keys(table), 5, k, byTable);
      for (const a of Object.keys(table)) expect(p.get(a)).toEqual(naive(a, k));
    }
    // A large fleet (sorts of more than a few elements merge runs): scores from a small range, many ties.
    const big = Array.from({ length: 300 }, (_, w) => (w * 7919) % 23);
    const bigScore = (_a: string, w: number) => BigInt(big[w]!);
    const top = [...big.keys()].sort((x, y) => big[y]! - big[x]! || x - y);
    for (const k of [1, 7, 40, 150]) expect(placeAdapters(["x"], 300, k, bigScore).get("x")).toEqual(top.slice(0, k).sort((x, y) => x - y));
    expect(placeAdapters(["c"], 5, 2, byTable).get("c")).toEqual([0, 1]);
    expect(placeAdapters(["b"], 5, 2, byTable).get("b")).toEqual([0, 2]);
  });

  test("each adapter on exactly `replicas` distinct workers, deterministic, spread over the fleet", () => {
    const names = Array.from({ length: 40 }, (_, i) => `lora-${i}`);
    const p = placeAdapters(names, 8, 2, score);
    for (const ws of p.values()) {
      expect(ws.length).toBe(2);
      expect(new Set(ws).size).toBe(2);
      for (const w of ws) expect(w >= 0 && w < 8).toBe(true);
    }
    expect(placeAdapters(names, 8, 2, score)).toEqual(p);
    const load = new Array(8).fill(0);
    for (const ws of p.values()) for (const w of ws) load[w]++;
    expect(Math.min(...load)).toBeGreaterThan(0);
  });

  test("removing a worker moves only the adapters it held", () => {
    const names = Array.from({ length: 30 }, (_, i) => `a${i}`);
    const before = placeAdapters(names, 6, 1, score);
    const after = placeAdapters(names, 5, 1, score); // worker 5 gone
    for (const n of names) if (before.get(n)![0] !== 5) expect(after.get(n)).toEqual(before.get(n)!);
  });

  test("replicas beyond the fleet put it everywhere; a bad count is refused", () => {
    expect(placeAdapters(["a"], 3, 9, score).get("a")).toEqual([0, 1, 2]);
    expect(() => placeAdapters(["a"], 3, 0, score)).toThrow("LoRA replicas must be an integer ≥ 1, got 0");
  });
});
