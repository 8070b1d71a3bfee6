import { describe, expect, test } from "bun:test";
import { MAX_BLOCKS_PER_TIER } from "../../config/engine.ts";
import { loadConfig } from "../../config/load.ts";
import { replayOptions, replayProblems, type ReplayConfig } from "../../config/replay.ts";
import { DEFAULT_ENGINE_CONFIG, engineConfigProblems, MAX_TIER_BLOCKS } from "../../core/engine/engine-config.ts";
import { replayOptionsFrom } from "./options-from-config.ts";

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

describe("replay flags shared with the mocker", () => {
  test("--host-offload-decode-blocks reaches the engines, next to an accepted --host-kv-events-medium (one config file serves mocker and replay)", () => {
    const load = (argv: string[]) => loadConfig(replayOptions, { argv, readFile: () => "" }, (c) => replayProblems(c as ReplayConfig)).config as ReplayConfig;
    const d = replayOptionsFrom(load([]));
    expect(d.engine.hostOffloadDecodeBlocks).toBe(false);
    const o = replayOptionsFrom(load(["--num-host-blocks", "8", "--host-offload-decode-blocks", "--host-kv-events-medium", "CPU"]));
    expect([o.engine.numHostBlocks, o.engine.hostOffloadDecodeBlocks]).toEqual([8, true]);
  });
});
