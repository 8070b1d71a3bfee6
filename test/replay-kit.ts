// What replay tests that call runReplay in-process share: deps over an in-memory file table (reads
// and writes recorded, paths under /ro/ not writable), a clock that moves 5 ms a call, and small
// options (2 workers, block size 4, kv routing) a test overrides as it needs.
import { createLogger } from "../src/lib/logger.ts";
import { createBlockHasher } from "../src/lib/xxh3.ts";
import type { ReplayDeps, ReplayOptions } from "../src/roles/replay/run-replay.ts";

export function replayHarness(files: Record<string, string>) {
  const out: string[] = [];
  const logs: string[] = [];
  const reads: string[] = [];
  const written: Record<string, string> = {};
  const deps: ReplayDeps = {
    hasher: createBlockHasher(),
    readFile: (p) => {
      reads.push(p);
      if (!(p in files)) throw new Error("ENOENT: no such file");
      return files[p]!;
    },
    writeFile: (p, t) => void (written[p] = t),
    checkWritable: (p) => {
      if (p.startsWith("/ro/")) throw new Error("EACCES: permission denied");
    },
    stdout: { write: (t: string) => out.push(t) },
    logger: createLogger({ level: "warn", stream: { write: (t: string) => logs.push(t) } as unknown as NodeJS.WritableStream }),
    now: (() => {
      let t = 0;
      return () => (t += 5);
    })(),
  };
  return { deps, out, logs, reads, written };
}

export const SMALL_REPLAY_OPTIONS: ReplayOptions = {
  traceBlockSize: 4,
  skipBadLines: false,
  synthetic: { numPrefixes: 2, prefixTokens: 32, suffixTokens: 8, outputTokens: 4 },
  arrivalSpeedupRatio: 1,
  numWorkers: 2,
  routerMode: "kv",
  engine: { blockSize: 4 },
  seed: 0,
};
