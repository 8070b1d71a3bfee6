import { describe, expect, test } from "bun:test";
import { balancedRank, pinnedRank } from "./dp-balance.ts";

describe("vLLM's DP balancer", () => {
  test("the lowest waiting × 4 + running wins; ties go to the first scanned from the start index", () => {
    expect(balancedRank([{ waiting: 0, running: 0 }, { waiting: 0, running: 0 }])).toBe(0);
    expect(balancedRank([{ waiting: 0, running: 0 }, { waiting: 0, running: 0 }], 1)).toBe(1);
    expect(balancedRank([{ waiting: 1, running: 0 }, { waiting: 0, running: 3 }])).toBe(1); // 4 > 3
    expect(balancedRank([{ waiting: 1, running: 0 }, { waiting: 0, running: 4 }])).toBe(0); // a tie at 4: the first scanned
    expect(balancedRank([{ waiting: 0, running: 2 }, { waiting: 0, running: 5 }, { waiting: 0, running: 1 }], 1)).toBe(2);
  });
});

describe("X-data-parallel-rank", () => {
  test("absent or blank: the balancer decides; a rank of the worker pins it", () => {
    expect([pinnedRank(null, 2), pinnedRank("", 2), pinnedRank(" 1 ", 2), pinnedRank("0", 1)]).toEqual([undefined, undefined, 1, 0]);
  });

  test("out of range or not a rank: a problem naming the header", () => {
    expect(pinnedRank("2", 2)).toEqual({ problem: "X-data-parallel-rank: rank 2 is out of range; this worker has 2 data-parallel rank(s), 0 to 1" });
    for (const bad of ["-1", "1.5", "one", "99999999999"]) expect(pinnedRank(bad, 4)).toHaveProperty("problem");
  });
});
