import { describe, expect, test } from "bun:test";
import { createRng } from "../random/rng.ts";
import { arrivalTimesMs, firstArrivals } from "./arrivals.ts";
import { sharedPrefixProblems, sharedPrefixWorkload } from "./synthetic.ts";

const read = (r: { inputLength: number; writeTokens(out: Uint32Array): void }) => {
  const out = new Uint32Array(r.inputLength);
  r.writeTokens(out);
  return [...out];
};
const opts = { numPrefixes: 3, prefixTokens: 16, suffixTokens: 5, outputTokens: 7, requests: 40, seed: 1 };

describe("synthetic shared-prefix workload", () => {
  test("requests share one of num-prefixes prefixes and have their own suffix", () => {
    const w = sharedPrefixWorkload(opts);
    expect(w.length).toBe(40);
    const prefixes = new Set(w.map((r) => read(r).slice(0, 16).join(",")));
    expect(prefixes.size).toBe(3);
    const suffixes = new Set(w.map((r) => read(r).slice(16).join(",")));
    expect(suffixes.size).toBe(40);
    expect(w.every((r) => r.inputLength === 21 && r.outputLength === 7)).toBe(true);
    expect(read(w[5]!)).toEqual(read(w[5]!)); // rebuilt identically on demand
  });

  test("seeded: same seed same prompts, another seed others", () => {
    const a = sharedPrefixWorkload(opts).map(read);
    expect(sharedPrefixWorkload(opts).map(read)).toEqual(a);
    expect(sharedPrefixWorkload({ ...opts, seed: 2 }).map(read)).not.toEqual(a);
  });

  test("tokens below the default vocabulary of 32000, every prefix token drawn (the first too)", () => {
    // 400,000 draws: a vocabulary one token larger would show its extra token about 12 times.
    const all = read(sharedPrefixWorkload({ ...opts, numPrefixes: 1, requests: 1, prefixTokens: 400_000 })[0]!);
    expect(all.reduce((m, t) => Math.max(m, t), 0)).toBe(31_999);
    // Different seeds give different first tokens: position 0 is drawn like the rest.
    const firsts = new Set(Array.from({ length: 20 }, (_, s) => read(sharedPrefixWorkload({ ...opts, numPrefixes: 1, requests: 1, seed: s })[0]!)[0]));
    expect(firsts.size).toBeGreaterThan(15);
  });

  test("the smallest valid options have no problems; output and prompt tokens of 0 do", () => {
    expect(sharedPrefixProblems({ ...opts, numPrefixes: 1, requests: 1, outputTokens: 1, prefixTokens: 0, suffixTokens: 1 })).toEqual([]);
    expect(sharedPrefixProblems({ ...opts, outputTokens: 0, prefixTokens: 0, suffixTokens: 0 })).toEqual([
      "--output-tokens: got 0, expected an integer ≥ 1",
      "--prefix-tokens + --suffix-tokens must be at least 1",
    ]);
  });

  test("bad options are named", () => {
    expect(sharedPrefixProblems({ ...opts, numPrefixes: 0, requests: 0 })).toEqual([
      "--num-prefixes: got 0, expected an integer ≥ 1",
      "--requests: got 0, expected an integer ≥ 1",
    ]);
  });
});

describe("arrivals", () => {
  const w = [5, 1000, 3000].map((t) => ({ timestampMs: t, inputLength: 1, outputLength: 1, writeTokens: () => {} }));
  test("Poisson (burstiness 1, the default) draws each gap as −ln(1 − u) / rate from the stream", () => {
    const reqs = Array.from({ length: 6 }, () => w[0]!);
    const expected: number[] = [0];
    const rng = createRng(9);
    for (let i = 1; i < 6; i++) expected.push(expected[i - 1]! + (-Math.log(1 - rng.next()) / 4) * 1000);
    for (const burstiness of [undefined, 1]) {
      const got = [...arrivalTimesMs(reqs, { kind: "rate", requestsPerSecond: 4, ...(burstiness ? { burstiness } : {}) }, createRng(9))!];
      got.forEach((t, i) => expect(t).toBeCloseTo(expected[i]!, 9));
    }
  });

  test("a closed loop starts with `concurrency` requests at 0, the next one fed by a completion", () => {
    expect(firstArrivals(5, undefined, { kind: "concurrency", concurrency: 2 })).toEqual({ time: [0, 0], index: [0, 1], nextClosed: 2 });
    expect(firstArrivals(5, undefined, { kind: "concurrency", concurrency: 9 })).toEqual({ time: [0, 0, 0, 0, 0], index: [0, 1, 2, 3, 4], nextClosed: 5 });
  });

  test("trace timestamps from the first one, divided by the speedup ratio", () => {
    expect([...arrivalTimesMs(w, { kind: "trace", speedupRatio: 2 }, createRng(0))!]).toEqual([0, 497.5, 1497.5]);
  });
  test("closed loop has no schedule", () => {
    expect(arrivalTimesMs(w, { kind: "concurrency", concurrency: 2 }, createRng(0))).toBeUndefined();
  });
  test("Poisson arrivals average 1/rate apart", () => {
    const many = Array.from({ length: 4000 }, () => w[0]!);
    const t = arrivalTimesMs(many, { kind: "rate", requestsPerSecond: 20 }, createRng(3))!;
    expect(t[0]).toBe(0);
    expect(t[3999]! / 3999).toBeGreaterThan(45);
    expect(t[3999]! / 3999).toBeLessThan(55);
  });
});
