import { describe, expect, test } from "bun:test";
import { createBlockHasher } from "../../lib/xxh3.ts";
import type { RouterMode } from "../../protocol/router-modes.ts";
import { sharedPrefixWorkload } from "../workload/synthetic.ts";
import { buildReport } from "./report.ts";
import { simulate, type SimulationOptions } from "./simulator.ts";

const hasher = createBlockHasher();

// 8 prefixes of 64 blocks; each worker's G1 (256 blocks) holds 4 of them, so reuse depends on
// keeping each prefix on one worker. At concurrency 32 the closed loop refills in bursts (a
// step's finishes arrive together): kv's index learns a prefix only when the step computing it
// ends, so siblings of a burst spread and evict one another; the oracle sees the prefix on the
// worker already computing it. Measured over seeds 0-9 at concurrency 32 and 64 the order held
// every time (oracle − kv 1.6 to 28 points); at 8-16 or with a G1 that never evicts, kv's
// greedy choices beat the oracle's by up to 4 points on some seeds (the same cost on better data
// is not a reuse maximiser), so those are not asserted.
function reuse(mode: RouterMode, seed: number): number {
  const workload = sharedPrefixWorkload({ numPrefixes: 8, prefixTokens: 1024, suffixTokens: 64, outputTokens: 16, requests: 160, seed });
  const opts: SimulationOptions = { engine: { blockSize: 16, numGpuBlocks: 256 }, numWorkers: 4, routerMode: mode, arrival: { kind: "concurrency", concurrency: 32 }, seed };
  const r = buildReport(simulate(workload, opts, { hasher }), { routerMode: mode, wallTimeMs: 1 });
  expect(r.failed).toBe(0);
  return r.prefix_cache_reuse_ratio;
}

describe("replay regret and the oracle router", () => {
  test("a single-worker stack has no regret in any mode: every request goes to the best (and least-loaded) rank", () => {
    const workload = sharedPrefixWorkload({ numPrefixes: 3, prefixTokens: 256, suffixTokens: 32, outputTokens: 8, requests: 60, seed: 1 });
    for (const routerMode of ["kv", "oracle", "random", "round-robin"] as const) {
      const sim = simulate(workload, { engine: { blockSize: 16, numGpuBlocks: 128 }, numWorkers: 1, routerMode, arrival: { kind: "concurrency", concurrency: 8 }, seed: 0, regret: true }, { hasher });
      expect(sim.regret).toEqual({
        requests: 60,
        best_cache_share: 1,
        mean_blocks: 0,
        p99_blocks: 0,
        mean_prefill_ms: 0,
        p99_prefill_ms: 0,
        histogram: [{ bucket_blocks: 0, count: 60 }],
        interval_s: 0,
        load: { unit: "requests waiting or running on the (worker, rank)", requests: 60, least_loaded_share: 1, mean: 0, p99: 0 },
      });
    }
  });

  test("with every rank idle at each decision (concurrency 1, device tier only) the oracle's choice is always a best-cache rank", () => {
    // Equal load terms leave the overlap credit as the only difference between candidates.
    const workload = sharedPrefixWorkload({ numPrefixes: 6, prefixTokens: 512, suffixTokens: 32, outputTokens: 8, requests: 80, seed: 3 });
    const sim = simulate(workload, { engine: { blockSize: 16, numGpuBlocks: 96 }, numWorkers: 3, routerMode: "oracle", arrival: { kind: "concurrency", concurrency: 1 }, seed: 0, regret: true }, { hasher });
    expect(sim.regret).toMatchObject({ requests: 80, best_cache_share: 1, mean_blocks: 0 });
  });

  test("prefix reuse: oracle ≥ kv ≥ random on bursts of a shared-prefix workload", () => {
    for (const seed of [0, 1, 2, 3]) {
      const [oracle, kv, random] = (["oracle", "kv", "random"] as const).map((m) => reuse(m, seed)) as [number, number, number];
      expect(oracle).toBeGreaterThanOrEqual(kv);
      expect(kv).toBeGreaterThanOrEqual(random);
    }
  });

  test("the report carries the regret (JSON key `regret`); kv's stale index costs more than the oracle view", () => {
    const workload = sharedPrefixWorkload({ numPrefixes: 8, prefixTokens: 1024, suffixTokens: 64, outputTokens: 16, requests: 160, seed: 0 });
    const run = (routerMode: RouterMode) => buildReport(simulate(workload, { engine: { blockSize: 16, numGpuBlocks: 256 }, numWorkers: 4, routerMode, arrival: { kind: "concurrency", concurrency: 32 }, seed: 0, regret: true }, { hasher }), { routerMode, wallTimeMs: 1 });
    const [oracle, kv] = [run("oracle"), run("kv")];
    expect(JSON.parse(JSON.stringify(kv)).regret.requests).toBe(160);
    expect(oracle.regret!.best_cache_share).toBeGreaterThan(kv.regret!.best_cache_share);
    expect(oracle.regret!.mean_blocks).toBeLessThan(kv.regret!.mean_blocks);
    expect(kv.regret!.mean_prefill_ms!).toBeGreaterThan(0);
  });

  test("regret off: no regret in the report, and every other figure as with it (judging never steers routing)", () => {
    const workload = sharedPrefixWorkload({ numPrefixes: 8, prefixTokens: 1024, suffixTokens: 64, outputTokens: 16, requests: 80, seed: 2 });
    for (const routerMode of ["kv", "oracle", "random"] as const) {
      const run = (regret?: boolean) => buildReport(simulate(workload, { engine: { blockSize: 16, numGpuBlocks: 256 }, numWorkers: 4, routerMode, arrival: { kind: "concurrency", concurrency: 16 }, seed: 2, regret }, { hasher }), { routerMode, wallTimeMs: 1 });
      const { regret: on, ...withRegret } = run(true);
      const { regret: off, ...without } = run(false);
      expect(on?.requests).toBe(80);
      expect(off).toBeUndefined();
      expect(without).toEqual(withRegret);
    }
  });
});
