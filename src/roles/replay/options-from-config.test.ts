import { describe, expect, test } from "bun:test";
import { MAX_BLOCKS_PER_TIER } from "../../config/engine.ts";
import { DEFAULT_ENGINE_CONFIG, engineConfigProblems, MAX_TIER_BLOCKS } from "../../core/engine/engine-config.ts";

describe("engine option bounds", () => {
  test("the flags' block-count cap is the one the core enforces (config cannot import core)", () => {
    expect(MAX_BLOCKS_PER_TIER).toBe(MAX_TIER_BLOCKS);
    expect(engineConfigProblems({ ...DEFAULT_ENGINE_CONFIG, numHostBlocks: MAX_TIER_BLOCKS, numGpuBlocks: MAX_TIER_BLOCKS })).toEqual([]);
    expect(engineConfigProblems({ ...DEFAULT_ENGINE_CONFIG, numHostBlocks: 3e9, numGpuBlocks: MAX_TIER_BLOCKS + 1 })).toEqual([
      `numGpuBlocks: got ${MAX_TIER_BLOCKS + 1}, expected at most ${MAX_TIER_BLOCKS}`,
      `numHostBlocks: got 3000000000, expected at most ${MAX_TIER_BLOCKS}`,
    ]);
  });
});
