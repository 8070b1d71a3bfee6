// A simulated run's samples give the verdict the report's own figures: pooled over the completed
// requests they equal the report's mean and p90 TTFT, mean ITL and TPOT, mean E2E, throughput and
// reuse (one definition of each figure, whether simulated or measured).
import { describe, expect, test } from "bun:test";
import { createBlockHasher } from "../../lib/xxh3.ts";
import { columnsOf, figuresOf, METRIC_COUNT } from "../stats/run-samples.ts";
import { sharedPrefixWorkload } from "../workload/synthetic.ts";
import { buildReport } from "./report.ts";
import { samplesOfSimulation } from "./samples.ts";
import { simulate } from "./simulator.ts";

describe("replay samples", () => {
  test("from a run's arrays, literally: errors skipped, duration from the first arrival to the last token", () => {
    const sim = {
      numRequests: 3, errors: new Map([[1, "boom"]]),
      arrivalMs: [100, 150, 300], firstTokenMs: [160, 0, 340], lastTokenMs: [400, 0, 1100], outputTokens: [5, 0, 1], promptTokens: [64, 64, 32], cachedTokens: [16, 0, 0],
    } as unknown as Parameters<typeof samplesOfSimulation>[0];
    expect(samplesOfSimulation(sim)).toEqual({
      requests: [
        { ttftMs: 60, e2elMs: 300, outputTokens: 5, itlSumMs: 240, itlCount: 4, promptTokens: 64, cachedTokens: 16 },
        { ttftMs: 40, e2elMs: 800, outputTokens: 1, itlSumMs: 760, itlCount: 0, promptTokens: 32, cachedTokens: 0 },
      ],
      durationS: 1,
    });
    const one = { ...sim, numRequests: 1 } as typeof sim;
    expect(samplesOfSimulation(one).durationS).toBeCloseTo(0.3, 12);
  });

  test("pooled, they are the report's figures", () => {
    const workload = sharedPrefixWorkload({ numPrefixes: 4, prefixTokens: 256, suffixTokens: 32, outputTokens: 12, requests: 60, seed: 3 });
    const sim = simulate(workload, { engine: { blockSize: 16 }, numWorkers: 2, routerMode: "kv", arrival: { kind: "concurrency", concurrency: 6 }, seed: 3 }, { hasher: createBlockHasher() });
    const samples = samplesOfSimulation(sim);
    const figures = new Float64Array(METRIC_COUNT);
    figuresOf([columnsOf(samples)], [undefined], figures, new Float64Array(samples.requests.length));
    const report = buildReport(sim, { routerMode: "kv", wallTimeMs: 1 });
    expect(samples.requests).toHaveLength(report.completed);
    expect(samples.durationS).toBeCloseTo(report.duration, 9);
    const expected = [report.mean_ttft_ms, report.p90_ttft_ms, report.mean_itl_ms, report.mean_tpot_ms, report.mean_e2el_ms, report.output_throughput, report.prefix_cache_reuse_ratio];
    expected.forEach((x, m) => expect(figures[m]!).toBeCloseTo(x, 6));
  });
});
