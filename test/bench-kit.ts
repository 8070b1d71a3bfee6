// What bench tests that call runBench in-process share: options with the fields every run sets the
// same way (token prompts, streaming, no warm-up, 10 s timeouts, the worker header), and deps that
// read and write real files, log nowhere unless asked, and run on the real clock.
import { readFileSync, writeFileSync } from "node:fs";
import { createLogger, type Logger } from "../src/lib/logger.ts";
import { createBlockHasher } from "../src/lib/xxh3.ts";
import type { BenchDeps, BenchOptions } from "../src/roles/bench/bench-types.ts";

/** Options for a run against `url`: `over` sets the workload, arrivals and anything else the test is about. */
export function benchOptions(url: string, over: Partial<BenchOptions> & Pick<BenchOptions, "workload">): BenchOptions {
  return {
    targets: [{ url }],
    endpoint: "/v1/completions",
    promptFormat: "tokens",
    stream: true,
    ignoreEos: true,
    arrivalSpeedupRatio: 1,
    warmupRequests: 0,
    percentiles: [50, 99],
    requestTimeoutS: 10,
    workerHeader: "x-kvcr-worker",
    ...over,
  };
}

/** Deps on the real clock and files; `logger` silent unless given. */
export function benchDeps(over: Partial<BenchDeps> & { logger?: Logger } = {}): BenchDeps {
  return {
    hasher: createBlockHasher(),
    readFile: (p) => readFileSync(p, "utf8"),
    writeFile: (p, t) => writeFileSync(p, t),
    checkWritable: () => {},
    stdout: { write: () => true },
    logger: createLogger({ level: "silent" }),
    now: () => performance.now(),
    sleep: (ms) => Bun.sleep(ms),
    ...over,
  };
}
