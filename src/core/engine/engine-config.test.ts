// The engine's defaults, against the mocker flags' documented defaults (docs/cli.md).
import { describe, expect, test } from "bun:test";
import { DEFAULT_ENGINE_CONFIG, engineConfigProblems } from "./engine-config.ts";

describe("DEFAULT_ENGINE_CONFIG", () => {
  test("the documented defaults: block size 64, 16384 G1 blocks, 256 sequences, 8192 batched tokens, 20 / 10 ms fixed steps, one LoRA", () => {
    expect(DEFAULT_ENGINE_CONFIG).toMatchObject({ blockSize: 64, numGpuBlocks: 16_384, maxNumSeqs: 256, maxNumBatchedTokens: 8192, prefillMs: 20, decodeMs: 10, maxLoras: 1 });
  });

  test("the defaults are a valid config", () => {
    expect(engineConfigProblems(DEFAULT_ENGINE_CONFIG)).toEqual([]);
  });
});
