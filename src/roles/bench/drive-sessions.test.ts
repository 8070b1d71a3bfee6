import { describe, expect, test } from "bun:test";
import { tokenize } from "../../core/text/tokenizer.ts";
import type { SessionLink } from "../../core/workload/sessions/session-link.ts";
import type { WorkloadRequest } from "../../core/workload/workload.ts";
import type { LoadDeps } from "./drive-load.ts";
import { driveSessions } from "./drive-sessions.ts";
import { formatResult, formatSideBySide } from "./format-result.ts";
import { buildResult } from "./metrics.ts";
import { detailedArrays } from "./result-json.ts";
import type { RequestRecord } from "./send-request.ts";

const turn = (session: SessionLink, timestampMs = 0, inputLength = 4): WorkloadRequest => ({ timestampMs, inputLength, outputLength: 2, writeTokens: (o) => o.fill(session.session + 1, 0, inputLength), session });

/**
 * A virtual clock for async code: timers resolve in time order once every pending callback has
 * run, so concurrent requests overlap as they would on a wall clock, and no real time passes.
 */
function fakeClock(serviceMs: (r: WorkloadRequest) => number, fail: (r: WorkloadRequest) => boolean = () => false) {
  let now = 0;
  const timers: { at: number; seq: number; resolve: () => void }[] = [];
  let seq = 0;
  const sleep = (ms: number) => new Promise<void>((resolve) => timers.push({ at: now + Math.max(0, ms), seq: seq++, resolve }));
  const sent: { prompt: number[]; at: number }[] = [];
  let open = 0;
  let maxOpen = 0;
  const deps: LoadDeps = {
    now: () => now,
    sleep,
    send: async (r) => {
      const prompt = new Uint32Array(r.inputLength);
      r.writeTokens(prompt);
      const at = now;
      sent.push({ prompt: Array.from(prompt), at });
      open++;
      maxOpen = Math.max(maxOpen, open);
      await sleep(serviceMs(r));
      open--;
      const rec: RequestRecord = fail(r)
        ? { ok: false, errorKind: "500", error: "HTTP 500", sentMs: at, ttftMs: NaN, itlMs: [], e2elMs: now - at, promptTokens: 0, outputTokens: 0 }
        : { ok: true, sentMs: at, ttftMs: 1, itlMs: [], e2elMs: now - at, promptTokens: r.inputLength, outputTokens: 2, text: " alpha beta" };
      return rec;
    },
  };
  const run = async <T>(p: Promise<T>): Promise<T> => {
    let done = false;
    void p.finally(() => (done = true));
    while (!done) {
      await new Promise((r) => setImmediate(r));
      if (done || timers.length === 0) continue;
      timers.sort((a, b) => a.at - b.at || a.seq - b.seq);
      const t = timers.shift()!;
      now = t.at;
      t.resolve();
    }
    return p;
  };
  return { deps, run, sent, maxOpen: () => maxOpen };
}

describe("driveSessions (bench on the wall clock)", () => {
  test("each later turn is sent its delay after the previous turn of its session finished; sessions interleave", async () => {
    const w = [
      turn({ session: 0, turn: 1, previous: -1, delayMs: 0 }, 0),
      turn({ session: 1, turn: 1, previous: -1, delayMs: 0 }, 30),
      turn({ session: 0, turn: 2, previous: 0, delayMs: 200 }),
      turn({ session: 1, turn: 2, previous: 1, delayMs: 10 }),
      turn({ session: 0, turn: 3, previous: 2, delayMs: 200 }),
    ];
    const f = fakeClock(() => 50);
    const r = await f.run(driveSessions({ workload: w, arrival: { kind: "trace", speedupRatio: 1 }, seed: 0, warmupRequests: 0 }, f.deps));
    expect(r.records.every((x) => x.ok)).toBe(true);
    const byIndex = new Map(r.records.map((x) => [x.index, x]));
    for (const [i, req] of w.entries()) {
      const link = req.session!;
      if (link.previous < 0) continue;
      const prev = byIndex.get(link.previous)!;
      expect(byIndex.get(i)!.sentMs).toBe(prev.sentMs + prev.e2elMs + link.delayMs);
    }
    // Session 1 ran both turns between session 0's first and second.
    expect(byIndex.get(3)!.sentMs).toBeLessThan(byIndex.get(2)!.sentMs);
    expect(r.records.map((x) => x.session)).toContainEqual({ session: 0, turn: 3 });
  });

  test("a turn that extends its predecessor carries the predecessor's prompt and generated text", async () => {
    const w = [turn({ session: 0, turn: 1, previous: -1, delayMs: 0 }), { ...turn({ session: 0, turn: 2, previous: 0, delayMs: 5, extendsPrevious: true }, 0, 3), writeTokens: (o: Uint32Array) => o.fill(9, 0, 3) }];
    const f = fakeClock(() => 10);
    const r = await f.run(driveSessions({ workload: w, arrival: { kind: "trace", speedupRatio: 1 }, seed: 0, warmupRequests: 0 }, f.deps));
    expect(r.records.length).toBe(2);
    expect(f.sent[1]!.prompt).toEqual([1, 1, 1, 1, ...tokenize(" alpha beta"), 9, 9, 9]);
  });

  test("--max-sessions caps open sessions; a failed turn's later turns are recorded failed, never sent", async () => {
    const w = [0, 1, 2].flatMap((s) => [turn({ session: s, turn: 1, previous: -1, delayMs: 0 }), turn({ session: s, turn: 2, previous: 2 * s, delayMs: 20 })]);
    const f = fakeClock(() => 10, (r) => r.session!.session === 1 && r.session!.turn === 1);
    const r = await f.run(driveSessions({ workload: w, arrival: { kind: "trace", speedupRatio: 1 }, seed: 0, warmupRequests: 0, maxSessions: 1 }, f.deps));
    expect(f.maxOpen()).toBe(1);
    expect(f.sent.length).toBe(5);
    const notSent = r.records.find((x) => x.index === 3)!;
    expect(notSent).toMatchObject({ ok: false, errorKind: "session_failed", error: "not sent: turn 1 of its session (request 2) failed" });
    // Session 2 opened only once session 1 (failed turn, cancelled turn) was over.
    const s2 = r.records.find((x) => x.index === 4)!;
    expect(s2.sentMs).toBe(r.records.find((x) => x.index === 2)!.sentMs + 10);
  });
});

describe("a bench run's session report", () => {
  test("the result has per-turn figures and session times; --save-detailed's arrays name each request's session, turn, send and finish", async () => {
    const w = [turn({ session: 0, turn: 1, previous: -1, delayMs: 0 }, 0), turn({ session: 0, turn: 2, previous: 0, delayMs: 100 }), turn({ session: 1, turn: 1, previous: -1, delayMs: 0 }, 20)];
    const f = fakeClock(() => 50);
    const load = await f.run(driveSessions({ workload: w, arrival: { kind: "trace", speedupRatio: 1 }, seed: 0, warmupRequests: 0 }, f.deps));
    const meta = { backend: "openai", modelId: "m", baseUrl: "http://x", endpoint: "/v1/completions", requestRate: "inf" as const, maxConcurrency: null, warmupRequests: 0 };
    const r = buildResult(load, meta, [50]);
    // No cached_tokens reported by this server: reuse is null, not 0.
    expect(r.sessions!.per_turn.map((t) => [t.turn, t.completed, t.prefix_cache_reuse_ratio])).toEqual([[1, 2, null], [2, 1, null]]);
    expect(r.sessions!.mean_session_time_s).toBeCloseTo((0.2 + 0.05) / 2);
    const d = detailedArrays(load.records) as Record<string, unknown[]>;
    expect(d.session_ids).toEqual([0, 1, 0]);
    expect(d.turns).toEqual([1, 1, 2]);
    expect(d.start_times).toEqual([0, 0.02, 0.15]);
    expect(d.finish_times).toEqual([0.05, 0.07, 0.2]);
    // The tables: a Sessions section alone, a row per turn index side by side.
    expect(formatResult(r, [50])).toContain("Turn 2: reuse / mean TTFT (ms):         n/a / 1.0");
    const side = formatSideBySide([{ ...r, label: "kv" }, { ...r, label: "round-robin" }], [50]);
    expect(side).toMatch(/turn 2 reuse \/ mean TTFT \(ms\) +n\/a \/ 1\.0 +n\/a \/ 1\.0/);
    expect(side).toContain("session time mean (s)");
  });
});
