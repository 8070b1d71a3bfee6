import { describe, expect, test } from "bun:test";
import { sampleProfile } from "../../../test/timing-profile-kit.ts";
import { polynomialPrefillMs } from "../timing/timing-model.ts";
import { histogram, prefillTimeMs, RegretTally, tieredOverlap, Tier, uncachedTokens } from "./regret.ts";

const poly = { timingModel: "polynomial", prefillMs: 20, maxNumBatchedTokens: 8192 } as const;

describe("regret arithmetic", () => {
  test("prefill time is the engine's, chunk by chunk of max_num_batched_tokens", () => {
    expect(prefillTimeMs(0, poly)).toBe(0);
    expect(prefillTimeMs(1000, poly)).toBe(polynomialPrefillMs(1000));
    expect(prefillTimeMs(8192 * 2 + 100, poly)).toBeCloseTo(2 * polynomialPrefillMs(8192) + polynomialPrefillMs(100), 9);
    // Fixed model: prefill_ms per step that prefills anything.
    const fixed = { timingModel: "fixed", prefillMs: 20, maxNumBatchedTokens: 100 } as const;
    expect([prefillTimeMs(1, fixed), prefillTimeMs(100, fixed), prefillTimeMs(101, fixed)]).toEqual([20, 20, 40]);
    // Profile model: its prefill table per chunk, each chunk after those before it (10 + tokens/100 + context/1000).
    const profile = { timingModel: "profile", prefillMs: 0, maxNumBatchedTokens: 1000, timingProfile: sampleProfile() } as const;
    expect(prefillTimeMs(1500, profile)).toBeCloseTo(10 + 10 + 0 + (10 + 5 + 1), 9);
  });

  test("uncached tokens: the prompt after the cached prefix, never below its last token", () => {
    expect(uncachedTokens(100, 2, 16)).toBe(68);
    expect(uncachedTokens(64, 4, 16)).toBe(1);
    expect(uncachedTokens(0, 0, 16)).toBe(0);
  });

  test("tiered overlap: device prefix, then the host continuation, then disk", () => {
    const held: Record<Tier, Set<number>> = { [Tier.device]: new Set([0, 1, 4]), [Tier.host]: new Set([2, 3, 5]), [Tier.disk]: new Set([4, 6]) };
    expect(tieredOverlap(8, (t, i) => held[t].has(i))).toBe(5); // 0-1 device, 2-3 host, 4 disk; 5 is host after disk: not counted
    expect(tieredOverlap(8, () => false)).toBe(0);
    expect(tieredOverlap(3, () => true)).toBe(3);
    // The tiers index a [device, host, disk] triple (as the bench's residency sets are kept).
    const triple = [new Set([0]), new Set([1]), new Set([2])];
    expect(tieredOverlap(4, (t, i) => triple[t]!.has(i))).toBe(3);
  });

  test("histogram: 0 alone, then power-of-two buckets up to the largest, empty ones kept", () => {
    expect(histogram([0, 0, 1, 3, 2, 9])).toEqual([
      { bucket_blocks: 0, count: 2 },
      { bucket_blocks: 1, count: 1 },
      { bucket_blocks: 2, count: 2 },
      { bucket_blocks: 4, count: 0 },
      { bucket_blocks: 8, count: 1 },
    ]);
    expect(histogram([])).toEqual([]);
  });

  test("tally: shares, means, p99 and load", () => {
    const t = new RegretTally();
    for (let i = 0; i < 300; i++) t.add({ chosenBlocks: 4, bestBlocks: i % 3 === 0 ? 8 : 4, prefillMs: i % 3 === 0 ? 10 : 0, load: { chosen: i % 2, least: 0 } });
    const s = t.summary(0, "requests");
    expect(s.requests).toBe(300);
    expect(s.best_cache_share).toBeCloseTo(2 / 3, 12);
    expect(s.mean_blocks).toBeCloseTo(4 / 3, 12);
    expect(s.p99_blocks).toBe(4);
    expect(s.mean_prefill_ms).toBeCloseTo(10 / 3, 12);
    expect(s.load).toEqual({ unit: "requests", requests: 300, least_loaded_share: 0.5, mean: 0.5, p99: 1 });
    expect(s.histogram).toEqual([{ bucket_blocks: 0, count: 200 }, { bucket_blocks: 1, count: 0 }, { bucket_blocks: 2, count: 0 }, { bucket_blocks: 4, count: 100 }]);
    // Nothing judged: no regret, every share 1.
    expect(new RegretTally().summary(1)).toEqual({ requests: 0, best_cache_share: 1, mean_blocks: 0, p99_blocks: 0, histogram: [], interval_s: 1 });
    expect(new RegretTally().summary(1, "tokens").load).toEqual({ unit: "tokens", requests: 0, least_loaded_share: 1, mean: 0, p99: 0 });
  });

  test("tally: the least-loaded share counts the decisions with no load above the least", () => {
    const t = new RegretTally();
    for (const chosen of [5, 2, 2]) t.add({ chosenBlocks: 0, bestBlocks: 0, load: { chosen, least: 2 } });
    expect(t.summary(0, "requests").load).toMatchObject({ requests: 3, least_loaded_share: 2 / 3, mean: 1 });
  });
});
