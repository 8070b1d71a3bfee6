// What a bench script hands runBench when it only wants the outcome: the real hasher, clock and
// sleep, files read from disk, nothing printed or written (unless `extra` says otherwise).
import { readFileSync } from "node:fs";
import { createBlockHasher } from "../../src/lib/xxh3.ts";
import type { Logger } from "../../src/lib/logger.ts";
import type { BenchDeps } from "../../src/roles/bench/bench-types.ts";

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
