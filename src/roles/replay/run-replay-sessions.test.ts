import { describe, expect, test } from "bun:test";
import { KvcrError } from "../../lib/errors.ts";
import { runReplay, type ReplayOptions } from "./run-replay.ts";
import { replayHarness as harness, SMALL_REPLAY_OPTIONS as opts } from "../../../test/replay-kit.ts";

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

describe("the session report", () => {
  // A short shared system prompt: turn 1 reuses little, later turns their growing history.
  const agentic = { sessions: 24, turns: 5, toolTokens: 64, thinkTimeMs: 1000, numPrefixes: 2, prefixTokens: 64, suffixTokens: 64, outputTokens: 32 };
  const run = (routerMode: ReplayOptions["routerMode"]) => {
    const h = harness({});
    return runReplay({ ...opts, numWorkers: 4, engine: { blockSize: 16 }, requestRate: 4, routerMode, agentic, outputJson: "-" }, h.deps).then((report) => ({ report, printed: JSON.parse(h.out.join("")) }));
  };

  test("per turn index under kv: reuse rises with the turn index, above round-robin's from turn 2; the JSON carries it", async () => {
    const kv = await run("kv");
    const rr = await run("round-robin");
    const reuse = (r: typeof kv) => r.report.sessions!.per_turn.map((t) => t.prefix_cache_reuse_ratio!);
    const k = reuse(kv);
    expect(k.length).toBe(5);
    for (let i = 1; i < k.length; i++) expect(k[i]!).toBeGreaterThan(k[i - 1]!);
    reuse(rr).slice(1).forEach((r, i) => expect(k[i + 1]!).toBeGreaterThan(r));
    expect(kv.printed.sessions).toEqual(JSON.parse(JSON.stringify(kv.report.sessions)));
    expect(kv.report.sessions).toMatchObject({ sessions: 24, completed_sessions: 24, mean_turns_per_session: 5 });
    // Four think times of mean 1 s at least: a session lasts seconds of simulated time.
    expect(kv.report.sessions!.mean_session_time_s).toBeGreaterThan(2);
  });

  test("the table has a row per turn index", async () => {
    const h = harness({});
    await runReplay({ ...opts, agentic: { ...agentic, sessions: 3, turns: 2 } }, h.deps);
    const table = h.out.join("");
    expect(table).toContain("Sessions (all turns completed):         3 (3)");
    expect(table).toMatch(/Turn 1: reuse \/ mean TTFT \(ms\): +\d\.\d{3} \/ \d+\.\d\n/);
    expect(table).toContain("Turn 2: reuse / mean TTFT (ms):");
  });
});
