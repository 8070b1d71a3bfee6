import { describe, expect, test } from "bun:test";
import { KvcrError } from "../../lib/errors.ts";
import { createLogger } from "../../lib/logger.ts";
import { createBlockHasher } from "../../lib/xxh3.ts";
import { runReplay, type ReplayDeps, type ReplayOptions } from "./run-replay.ts";

function harness(files: Record<string, string>) {
  const out: string[] = [];
  const logs: string[] = [];
  const deps: ReplayDeps = {
    hasher: createBlockHasher(),
    readFile: (p) => {
      if (!(p in files)) throw new Error("ENOENT: no such file");
      return files[p]!;
    },
    writeFile: () => {},
    checkWritable: () => {},
    stdout: { write: (t: string) => out.push(t) },
    logger: createLogger({ level: "warn", stream: { write: (t: string) => logs.push(t) } as unknown as NodeJS.WritableStream }),
    now: (() => {
      let t = 0;
      return () => (t += 5);
    })(),
  };
  return { deps, out, logs };
}

const opts: ReplayOptions = {
  traceBlockSize: 4,
  skipBadLines: false,
  synthetic: { numPrefixes: 2, prefixTokens: 32, suffixTokens: 8, outputTokens: 4 },
  arrivalSpeedupRatio: 1,
  numWorkers: 2,
  routerMode: "kv",
  engine: { blockSize: 4 },
  seed: 0,
};
const row = (o: object) => JSON.stringify({ input_length: 8, output_length: 3, hash_ids: [1, 2], ...o });
const text = [row({ session_id: "a", timestamp: 0 }), row({ session_id: "b", timestamp: 0, delay: 40 }), row({ session_id: "a", delay: 100 }), row({ session_id: "b", delay: 5 })].join("\n");

describe("replay of a session trace", () => {
  test("a non-zero delay on a first turn stops the run, naming the line and the field", async () => {
    const err = await runReplay({ ...opts, trace: "s.jsonl" }, harness({ "s.jsonl": text }).deps).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(KvcrError);
    expect((err as Error).message).toContain("1 bad line(s) in s.jsonl; nothing was simulated");
    expect((err as Error).message).toContain('s.jsonl:2: delay: 40 on the first turn of session "b"');
  });

  test("--skip-bad-lines drops the bad line's whole session and says so", async () => {
    const h = harness({ "s.jsonl": text });
    const report = await runReplay({ ...opts, trace: "s.jsonl", skipBadLines: true }, h.deps);
    expect(report.completed).toBe(2);
    expect(h.logs.join("")).toContain("dropping 1 whole session(s) with a bad line, and the 1 good turn(s) in them");
  });

  test("--trace-format names the format: a bailian file read as multi_turn is bad input, not a guess", async () => {
    const bailian = JSON.stringify({ chat_id: 1, parent_chat_id: -1, timestamp: 0, input_length: 8, output_length: 2, turn: 1, hash_ids: [1] });
    expect((await runReplay({ ...opts, trace: "b.jsonl" }, harness({ "b.jsonl": bailian }).deps)).completed).toBe(1);
    const err = await runReplay({ ...opts, trace: "b.jsonl", traceFormat: "multi_turn" }, harness({ "b.jsonl": bailian }).deps).catch((e: unknown) => e);
    expect((err as Error).message).toContain("b.jsonl:1: turns must be a non-empty array, got undefined");
  });

  test("the synthetic agentic workload replays its sessions", async () => {
    const report = await runReplay({ ...opts, agentic: { sessions: 4, turns: 3, toolTokens: 8, thinkTimeMs: 50, numPrefixes: 1, prefixTokens: 32, suffixTokens: 8, outputTokens: 4 } }, harness({}).deps);
    expect(report).toMatchObject({ completed: 12, failed: 0 });
  });
});
