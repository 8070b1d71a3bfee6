import { describe, expect, test } from "bun:test";
import { randomDataset, randomDatasetProblems, randomLengthRanges } from "./random-dataset.ts";

const tokensOf = (r: { inputLength: number; writeTokens(out: Uint32Array): void }) => {
  const out = new Uint32Array(r.inputLength);
  r.writeTokens(out);
  return [...out];
};

describe("vLLM's random dataset", () => {
  test("ranges as vLLM computes them: floor below, ceil above, output at least 1", () => {
    expect(randomLengthRanges({ inputLen: 1024, outputLen: 128, rangeRatio: 0 })).toEqual({ input: [1024, 1024], output: [128, 128] });
    expect(randomLengthRanges({ inputLen: 101, outputLen: 3, rangeRatio: 0.5 })).toEqual({ input: [50, 152], output: [1, 5] });
    expect(randomLengthRanges({ inputLen: 10, outputLen: 1, rangeRatio: 0.99 })).toEqual({ input: [0, 20], output: [1, 2] });
  });

  test("every length is within its range, prefix + sampled, and the ranges are covered", () => {
    const w = randomDataset({ inputLen: 40, outputLen: 10, prefixLen: 7, rangeRatio: 0.25, requests: 2000, seed: 5 });
    const inputs = w.map((r) => r.inputLength - 7);
    const outputs = w.map((r) => r.outputLength);
    expect(Math.min(...inputs)).toBe(30);
    expect(Math.max(...inputs)).toBe(50);
    expect(Math.min(...outputs)).toBe(7);
    expect(Math.max(...outputs)).toBe(13);
    // Uniform: the mean sits near the middle of each range.
    expect(inputs.reduce((a, b) => a + b, 0) / inputs.length).toBeCloseTo(40, 0);
  });

  test("one shared prefix, distinct bodies, seeded", () => {
    const o = { inputLen: 16, outputLen: 4, prefixLen: 8, rangeRatio: 0, requests: 20, seed: 1 };
    const a = randomDataset(o).map(tokensOf);
    expect(new Set(a.map((t) => t.slice(0, 8).join(","))).size).toBe(1);
    expect(randomDataset(o).every((r) => r.timestampMs === 0)).toBe(true); // no schedule of its own: the arrival spec decides
    expect(new Set(a.map((t) => t.slice(8).join(","))).size).toBe(20);
    expect(randomDataset(o).map(tokensOf)).toEqual(a);
    expect(randomDataset({ ...o, seed: 2 }).map(tokensOf)).not.toEqual(a);
  });

  test("an empty shortest prompt and a ratio of 1 are refused, naming vLLM's flags", () => {
    expect(randomDatasetProblems({ inputLen: 1, outputLen: 1, prefixLen: 0, rangeRatio: 0.5 })[0]).toStartWith("--random-input-len: the shortest possible prompt");
    expect(randomDatasetProblems({ inputLen: 1, outputLen: 1, prefixLen: 1, rangeRatio: 0.5 })).toEqual([]);
    expect(randomDatasetProblems({ inputLen: 8, outputLen: 1, prefixLen: 0, rangeRatio: 1 })).toEqual(["--random-range-ratio: got 1, expected a number in [0, 1)"]);
    expect(randomDatasetProblems({ inputLen: 8, outputLen: 1, prefixLen: 0, rangeRatio: 0 })).toEqual([]); // 0 is in range
    expect(randomDatasetProblems({ inputLen: 8, outputLen: 1, prefixLen: 0, rangeRatio: -0.1 })).toEqual(["--random-range-ratio: got -0.1, expected a number in [0, 1)"]);
  });
});
