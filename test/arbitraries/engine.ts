// fast-check generators of small engine configs and shared-prefix request mixes, shared by the
// engine's invariant property tests. Test-only (kept out of src/ so no runtime code reaches fast-check).
import fc from "fast-check";
import type { EngineConfig } from "../../src/core/engine/engine-config.ts";

export const engineConfigArb = fc
  .record({
    blockSize: fc.constantFrom(2, 4),
    numGpuBlocks: fc.oneof(fc.integer({ min: 6, max: 24 }), fc.integer({ min: 65, max: 140 })), // > 64: the pool's arrays grow
    numHostBlocks: fc.constantFrom(0, 0, 3, 8, 16),
    hostOffloadD2hBandwidthGbps: fc.constantFrom(0, 1e-6, 4e-6),
    hostOffloadH2dBandwidthGbps: fc.constantFrom(0, 1e-6, 4e-6),
    maxNumSeqs: fc.integer({ min: 1, max: 5 }),
    maxNumBatchedTokens: fc.integer({ min: 4, max: 40 }),
    enablePrefixCaching: fc.boolean(),
    enableChunkedPrefill: fc.boolean(),
    preemptionMode: fc.constantFrom("lifo" as const, "fifo" as const),
    releasedFifoBlocks: fc.constantFrom(1, 4, 16_384),
    hostOffloadDecodeBlocks: fc.boolean(),
    seed: fc.integer({ min: 0, max: 1000 }),
  })
  .map((c): Partial<EngineConfig> => ({
    ...c,
    numHostBlocks: c.enablePrefixCaching ? c.numHostBlocks : 0,
    kvBytesPerToken: 1,
    timingModel: "fixed",
    prefillMs: 1,
    decodeMs: 1,
  }));

export interface RandomRequest {
  base: number;
  baseLen: number;
  tail: number[];
  maxTokens: number;
  arriveAtStep: number;
}

// Prompts share prefixes: a base prompt from a few, cut at a random length, plus a random tail.
export const requestArb: fc.Arbitrary<RandomRequest> = fc.record({
  base: fc.integer({ min: 0, max: 2 }),
  baseLen: fc.integer({ min: 0, max: 14 }),
  tail: fc.array(fc.integer({ min: 0, max: 50 }), { maxLength: 6 }),
  maxTokens: fc.integer({ min: 1, max: 7 }),
  arriveAtStep: fc.integer({ min: 0, max: 25 }),
});

const BASES = [0, 1, 2].map((b) => Array.from({ length: 14 }, (_, i) => b * 1000 + i));

/** The prompt token ids of a generated request (never empty). */
export function promptOf(r: RandomRequest): number[] {
  const prompt = [...BASES[r.base]!.slice(0, r.baseLen), ...r.tail];
  if (prompt.length === 0) prompt.push(7);
  return prompt;
}
