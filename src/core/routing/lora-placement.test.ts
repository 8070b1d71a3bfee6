import { describe, expect, test } from "bun:test";
import { createBlockHasher } from "../../lib/xxh3.ts";
import { placeAdapters } from "./lora-placement.ts";

const hasher = createBlockHasher();
const score = (a: string, w: number) => hasher.localHash(Uint32Array.of(w), hasher.seedOf(a));

describe("rendezvous placement of LoRA adapters", () => {
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
