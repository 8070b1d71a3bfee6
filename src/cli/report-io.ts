// What the load-driving commands (replay, bench) hand their role for files, output and time:
// the real file system, stdout, the block hasher and the wall clock.
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import type { Logger } from "../lib/logger.ts";
import { probeWritable } from "../lib/probe-writable.ts";
import { createBlockHasher } from "../lib/xxh3.ts";

export function reportIo(logger: Logger) {
  return {
    hasher: createBlockHasher(),
    readFile: (p: string) => readFileSync(p, "utf8"),
    // A file's directory is made, as vLLM makes its result directory (--export-aiperf's run directories).
    writeFile: (p: string, t: string) => {
      mkdirSync(dirname(p), { recursive: true });
      writeFileSync(p, t);
    },
    checkWritable: probeWritable,
    stdout: process.stdout,
    logger,
    now: () => performance.now(),
  };
}
