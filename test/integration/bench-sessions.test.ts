// `bench` with a session trace against an in-test OpenAI-style server: the server sees each turn
// only after the previous turn of its session was done plus the turn's delay (checked per request
// on the server's own times), sessions interleave, and a failed turn's later turns are never sent.
import { describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createLogger } from "../../src/lib/logger.ts";
import { createBlockHasher } from "../../src/lib/xxh3.ts";
import { runBench } from "../../src/roles/bench/run-bench.ts";
import type { BenchDeps, BenchOptions } from "../../src/roles/bench/bench-types.ts";
import { startFakeOpenAi } from "../fake-openai-server.ts";
import { tempDir } from "../harness.ts";

const deps = (): BenchDeps => ({
  hasher: createBlockHasher(),
  readFile: (p) => readFileSync(p, "utf8"),
  writeFile: () => {},
  checkWritable: () => {},
  stdout: { write: () => {} },
  logger: createLogger({ level: "silent" }),
  now: () => performance.now(),
  sleep: (ms) => Bun.sleep(ms),
});

/** Session s, turn t: its prompt's first token names it (hash id s·100 + t at 4 tokens per id). */
const row = (s: number, t: number, head: object) => JSON.stringify({ session_id: `s${s}`, ...head, input_length: 8, output_length: 3, hash_ids: [s * 100 + t, 7] });
const DELAY = 40;
const turns = (sessions: number, perSession: number) => Array.from({ length: sessions }, (_, s) => Array.from({ length: perSession }, (_, k) => row(s, k + 1, k === 0 ? { timestamp: s * 5 } : { delay: DELAY })).join("\n")).join("\n");

const options = (url: string, trace: string, over: Partial<BenchOptions> = {}): BenchOptions => ({
  targets: [{ url }],
  endpoint: "/v1/completions",
  promptFormat: "tokens",
  stream: true,
  ignoreEos: true,
  workload: { trace, traceBlockSize: 4, skipBadLines: false, synthetic: { numPrefixes: 1, prefixTokens: 8, suffixTokens: 0, outputTokens: 3 }, seed: 0 },
  arrivalSpeedupRatio: 1,
  warmupRequests: 0,
  percentiles: [50],
  requestTimeoutS: 10,
  workerHeader: "x-kvcr-worker",
  ...over,
});

describe("bench with a session trace", () => {
  test("the server receives each later turn no sooner than the previous turn's end plus its delay; sessions interleave", async () => {
    using dir = tempDir();
    const trace = join(dir.path, "sessions.jsonl");
    writeFileSync(trace, turns(3, 3));
    await using server = startFakeOpenAi({ ttftMs: 10, itlMs: 5, cachedTokens: () => 4 });
    const { results } = await runBench(options(server.url, trace), deps());
    expect(results[0]).toMatchObject({ completed: 9, failed: 0 });
    const seen = new Map<number, { received: number; done: number }>();
    server.bodies.forEach((b, k) => seen.set((b.prompt as number[])[0]!, { received: server.timings[k]!.receivedMs, done: server.timings[k]!.doneMs! }));
    expect(seen.size).toBe(9);
    for (let s = 0; s < 3; s++) {
      for (let t = 2; t <= 3; t++) expect(seen.get(s * 100 + t)!.received).toBeGreaterThanOrEqual(seen.get(s * 100 + t - 1)!.done + DELAY);
    }
    // Interleaved: every session's first turn (due within 10 ms) came before any session's third (two delays later).
    expect(Math.max(...[0, 1, 2].map((s) => seen.get(s * 100 + 1)!.received))).toBeLessThan(Math.min(...[0, 1, 2].map((s) => seen.get(s * 100 + 3)!.received)));
    expect(results[0]!.sessions).toMatchObject({ sessions: 3, completed_sessions: 3, mean_turns_per_session: 3 });
    expect(results[0]!.sessions!.per_turn.map((t) => t.prefix_cache_reuse_ratio)).toEqual([0.5, 0.5, 0.5]);
  });

  test("--max-sessions 1: one session at a time; a turn the server fails takes its session's later turns with it", async () => {
    using dir = tempDir();
    const trace = join(dir.path, "sessions.jsonl");
    writeFileSync(trace, turns(2, 3));
    // Session 0's turn 2 fails.
    await using server = startFakeOpenAi({ ttftMs: 5, itlMs: 2, plan: (_, body) => ((body.prompt as number[])[0] === 2 ? "500" : "ok") });
    const { results } = await runBench(options(server.url, trace, { maxSessions: 1 }), deps());
    expect(results[0]).toMatchObject({ completed: 4, failed: 2, error_breakdown: { "500": 1, session_failed: 1 } });
    expect(server.bodies.map((b) => (b.prompt as number[])[0])).toEqual([1, 2, 101, 102, 103]);
  });
});
