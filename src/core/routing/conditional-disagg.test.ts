import { describe, expect, test } from "bun:test";
import { effectiveIsl, shouldBypassRemotePrefill } from "./conditional-disagg.ts";

/** Dynamo's defaults. */
const DEFAULTS = { effIslThreshold: 2048, effIslRatioThreshold: 0.7 };

describe("isl_bounding", () => {
  test("effective ISL is the prompt less the cached prefix, never below 0", () => {
    expect(effectiveIsl({ promptTokens: 1000, overlapBlocks: 10, blockSize: 16 })).toBe(840);
    expect(effectiveIsl({ promptTokens: 100, overlapBlocks: 10, blockSize: 16 })).toBe(0);
  });

  test("an empty prompt stays on the decode worker; a one-token cold prompt goes remote (ratio 1)", () => {
    expect(shouldBypassRemotePrefill({ promptTokens: 0, overlapBlocks: 0, blockSize: 16 }, DEFAULTS)).toBe(true);
    expect(shouldBypassRemotePrefill({ promptTokens: 1, overlapBlocks: 0, blockSize: 16 }, DEFAULTS)).toBe(false);
  });

  test("both conditions must hold: small effective prompt and small share of the prompt", () => {
    // 4096 tokens, 3072 cached: eff 1024 (< 2048), ratio 0.25 (< 0.7) → local prefill.
    expect(shouldBypassRemotePrefill({ promptTokens: 4096, overlapBlocks: 192, blockSize: 16 }, DEFAULTS)).toBe(true);
    // A short cold prompt: eff 500 < 2048 but ratio 1 ≥ 0.7 → remote prefill.
    expect(shouldBypassRemotePrefill({ promptTokens: 500, overlapBlocks: 0, blockSize: 16 }, DEFAULTS)).toBe(false);
    // A long prompt mostly cached yet with 3000 tokens left: eff ≥ 2048 → remote prefill.
    expect(shouldBypassRemotePrefill({ promptTokens: 20000, overlapBlocks: 1062, blockSize: 16 }, DEFAULTS)).toBe(false);
  });

  test("the thresholds are strict, as Dynamo's", () => {
    // eff exactly 2048, ratio 0.5: not below the absolute threshold.
    expect(shouldBypassRemotePrefill({ promptTokens: 4096, overlapBlocks: 128, blockSize: 16 }, DEFAULTS)).toBe(false);
    // ratio exactly 0.7: not below.
    expect(shouldBypassRemotePrefill({ promptTokens: 1000, overlapBlocks: 30, blockSize: 10 }, DEFAULTS)).toBe(false);
    expect(shouldBypassRemotePrefill({ promptTokens: 1000, overlapBlocks: 31, blockSize: 10 }, DEFAULTS)).toBe(true);
  });
});
