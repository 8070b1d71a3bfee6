import { describe, expect, test } from "bun:test";
import { hasher } from "../../../test/engine-kit.ts";
import { simulate } from "../replay/simulator.ts";
import { meanItlMs, observedWorkload, type ObservedRequest } from "./observed-workload.ts";

const req = (sendMs: number, promptTokens: number, cachedTokens = NaN, ttftMs = 10): ObservedRequest => ({ sendMs, promptTokens, outputTokens: 2, cachedTokens, ttftMs, e2eMs: ttftMs + 5 });

describe("a measured run as a replay workload", () => {
  test("prompts are unique unless the run reports cached tokens; those are whole blocks of an earlier prompt whose first token came back before", () => {
    const reqs = [req(0, 100), req(50, 120, 70), req(55, 90, 64), req(60, 80)];
    const { workload, cachedTokens, placedCachedTokens } = observedWorkload(reqs, 16);
    // 70 cached → 64 (4 whole blocks) from request 0 (its first token at 10 ms); request 2 was sent
    // at 55 ms, after request 0's and 1's first tokens: its 64 come from request 1, which holds request 0's.
    expect(cachedTokens).toBe(134);
    expect(placedCachedTokens).toBe(128);
    expect(workload.map((w) => [w.timestampMs, w.inputLength, w.outputLength])).toEqual([[0, 100, 2], [50, 120, 2], [55, 90, 2], [60, 80, 2]]);
    const sim = simulate(workload, { engine: { blockSize: 16, numGpuBlocks: 256, timingModel: "fixed", prefillMs: 10, decodeMs: 5 }, numWorkers: 1, routerMode: "round-robin", arrival: { kind: "trace", speedupRatio: 1 }, seed: 0 }, { hasher });
    expect(Array.from(sim.cachedTokens)).toEqual([0, 64, 64, 0]);
  });

  test("no donor sent early enough, or none long enough: the cached tokens are computed, and counted as not placed", () => {
    const { placedCachedTokens, cachedTokens } = observedWorkload([req(0, 100, NaN, 40), req(20, 120, 64), req(60, 300, 200)], 16);
    expect(cachedTokens).toBe(264);
    expect(placedCachedTokens).toBe(0);
  });

  test("a request's mean ITL is its gaps over its tokens after the first", () => {
    expect(meanItlMs({ ...req(0, 10), outputTokens: 5, ttftMs: 20, e2eMs: 60 })).toBe(10);
    expect(meanItlMs({ ...req(0, 10), outputTokens: 1 })).toBeNaN();
  });
});
