// The output-token key's inputs, as properties: every seed bit (the high word of seeds from 2^32
// on included), every prompt token before the last full block's hash takes over, nothing past the
// prompt's end.
import { describe, expect, test } from "bun:test";
import { mix32 } from "../random/rng.ts";
import { outputKey, outputToken } from "./output-tokens.ts";

const tokens = Uint32Array.from([11, 22, 33, 44, 55, 66, 77]);

describe("outputKey", () => {
  test("distinct small seeds give distinct keys (no seed bit dropped)", () => {
    const keys = Array.from({ length: 16 }, (_, s) => outputKey(s, tokens, 5, 4, undefined));
    expect(new Set(keys).size).toBe(16);
  });

  test("seeds that differ only above 2^32 give distinct keys", () => {
    const keys = [0, 1, 2, 3].map((hi) => outputKey(7 + hi * 2 ** 32, tokens, 5, 4, undefined));
    expect(new Set(keys).size).toBe(4);
  });

  test("a seed below 2^32 has no high-word step: seed, length, then each token folded in", () => {
    let k = mix32(9 ^ 0x5bd1e995);
    k = mix32(k ^ 3);
    for (const t of [11, 22, 33]) k = mix32(k ^ t);
    expect(outputKey(9, tokens, 3, 4, undefined)).toBe(k);
  });

  test("without a block hash every prompt token counts, the first one too", () => {
    const other = Uint32Array.from(tokens);
    other[0] = 12;
    expect(outputKey(1, other, 3, 4, undefined)).not.toBe(outputKey(1, tokens, 3, 4, undefined));
  });

  test("tokens past the prompt's length do not count", () => {
    const other = Uint32Array.from(tokens);
    other[3] = 999;
    expect(outputKey(1, other, 3, 4, undefined)).toBe(outputKey(1, tokens, 3, 4, undefined));
    expect(outputKey(1, other, 6, 4, 5n)).toBe(outputKey(1, Uint32Array.from([0, 0, 0, 0, 55, 66, 1]), 6, 4, 5n));
  });
});

describe("outputToken", () => {
  test("in [0, vocab), and distinct indexes of one key spread over the vocabulary", () => {
    const out = Array.from({ length: 1000 }, (_, i) => outputToken(12345, i, 32_000));
    expect(out.every((t) => Number.isInteger(t) && t >= 0 && t < 32_000)).toBe(true);
    expect(new Set(out).size).toBeGreaterThan(950);
  });
});
