import { describe, expect, test } from "bun:test";
import { createRng, MAX_SEED, mix32 } from "./rng.ts";
import { outputKey } from "../engine/output-tokens.ts";

describe("seeded rng", () => {
  const firstEight = (seed: number) => {
    const r = createRng(seed);
    return Array.from({ length: 8 }, () => r.nextU32());
  };

  test("the same seed gives the same stream", () => {
    expect(firstEight(7)).toEqual(firstEight(7));
  });

  test("a different seed gives a different stream", () => {
    expect(firstEight(8)).not.toEqual(firstEight(7));
  });

  test("next() in [0,1) and int(n) in range with every value reached", () => {
    const r = createRng(1);
    const seen = new Set<number>();
    for (let i = 0; i < 2000; i++) {
      const x = r.next();
      expect(x >= 0 && x < 1).toBe(true);
      const k = r.int(10);
      expect(k >= 0 && k < 10 && Number.isInteger(k)).toBe(true);
      seen.add(k);
    }
    expect(seen.size).toBe(10);
  });

  test("next() is the stream's u32 over 2^32, int(n) its floor scaled by n", () => {
    const a = createRng(5);
    const b = createRng(5);
    for (let i = 0; i < 100; i++) expect(a.next()).toBe(b.nextU32() / 4294967296);
    for (let i = 0; i < 100; i++) expect(a.int(1000)).toBe(Math.floor((b.nextU32() / 4294967296) * 1000));
  });

  test("roughly uniform: mean of 10,000 draws near 0.5", () => {
    const r = createRng(123);
    let sum = 0;
    for (let i = 0; i < 10_000; i++) sum += r.next();
    expect(Math.abs(sum / 10_000 - 0.5)).toBeLessThan(0.02);
  });

  test("mix32 is a u32 avalanche", () => {
    expect(mix32(0)).toBe(0);
    expect(mix32(1)).not.toBe(mix32(2));
    expect(mix32(0xffffffff) >= 0 && mix32(0xffffffff) <= 0xffffffff).toBe(true);
  });

  test("the whole seed range counts: seeds that differ only above bit 32 give different streams and tokens", () => {
    const first = (seed: number) => Array.from({ length: 4 }, ((r) => () => r.nextU32())(createRng(seed)));
    expect(first(2 ** 32)).not.toEqual(first(0));
    expect(first(2 ** 32 + 5)).not.toEqual(first(5));
    expect(first(MAX_SEED)).not.toEqual(first(MAX_SEED - 2 ** 32));
    expect(first(7)).toEqual(first(7));
    const prompt = Uint32Array.from([1, 2, 3]);
    expect(outputKey(2 ** 32, prompt, 3, 4, undefined)).not.toBe(outputKey(0, prompt, 3, 4, undefined));
    expect(outputKey(2 ** 40 + 9, prompt, 3, 4, undefined)).not.toBe(outputKey(9, prompt, 3, 4, undefined));
    // Seeds it cannot represent exactly are refused, not rounded.
    expect(() => createRng(2 ** 53)).toThrow("seed must be an integer from 0 to 9007199254740991");
    expect(() => createRng(-1)).toThrow("seed must be an integer");
  });
});
