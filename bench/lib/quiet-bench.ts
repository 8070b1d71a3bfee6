// What a bench script hands runBench when it only wants the outcome: the real hasher, clock and
// sleep, files read from disk, nothing printed or written (unless `extra` says otherwise).
import { readFileSync } from "node:fs";
import { createBlockHasher } from "../../src/lib/xxh3.ts";
import type { Logger } from "../../src/lib/logger.ts";
import type { BenchDeps, BenchOptions } from "../../src/roles/bench/bench-types.ts";

export function quietBenchDeps(logger: Logger, extra: Partial<BenchDeps> = {}): BenchDeps {
  return {
    hasher: createBlockHasher(),
    readFile: (p) => readFileSync(p, "utf8"),
    writeFile: () => {},
    checkWritable: () => {},
    stdout: { write: () => true },
    logger,
    now: () => performance.now(),
    sleep: (ms) => Bun.sleep(ms),
    ...extra,
  };
}

/**
 * The options a bench script's runs share (streamed token prompts to /v1/completions, no warm-up,
 * vLLM's percentiles, the serving worker read from its header); `over` gives targets, workload,
 * concurrency and anything else.
 */
export function scriptBenchOptions(over: Pick<BenchOptions, "targets" | "workload" | "concurrency"> & Partial<BenchOptions>): BenchOptions {
  return {
    endpoint: "/v1/completions",
    promptFormat: "tokens",
    stream: true,
    ignoreEos: true,
    arrivalSpeedupRatio: 1,
    warmupRequests: 0,
    percentiles: [50, 90, 99],
    requestTimeoutS: 120,
    workerHeader: "x-kvcr-worker",
    ...over,
  };
}
