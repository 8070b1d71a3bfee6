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
