// A side's rounds pooled as one run back to back (durations add, records keep their order and
// gaps), verdict samples from completed requests only, sides grouped in the order they ran.
import { describe, expect, test } from "bun:test";
import type { TimedRecord } from "./drive-load.ts";
import { buildResult, type RunMeta } from "./metrics.ts";
import { clientTimingOf, poolRounds, samplesOf, sidesOf } from "./pool-rounds.ts";
import type { MeasuredRun } from "./bench-types.ts";

const meta: RunMeta = { backend: "openai", modelId: "m", baseUrl: "http://x", endpoint: "/v1/completions", requestRate: "inf", maxConcurrency: 2, warmupRequests: 0 };
const rec = (index: number, sentMs: number, ok = true, over: Partial<TimedRecord> = {}): TimedRecord => ({ index, inFlightAtSend: 1, ok, sentMs, ttftMs: ok ? 10 : NaN, itlMs: ok ? [2, 3] : [], e2elMs: 20, promptTokens: 100, outputTokens: ok ? 3 : 0, cachedTokens: ok ? 50 : undefined, ...over });

function run(label: string, round: number, startMs: number, records: TimedRecord[]): MeasuredRun {
  const load = { records, startMs, endMs: startMs + 1000, warmup: { sent: 0, failed: 0 }, cutShort: false };
  const result = { ...buildResult(load, { ...meta, label }, [50]), round, client_event_loop_lag: { samples: 10, p50_ms: 0, p99_ms: round, max_ms: round, threshold_ms: 1, distorts_itl: round > 1 }, client_cpu_share: 0.1 * round };
  return { label, round, records, result, startMs, load, meta: { ...meta, label } };
}

describe("pool-rounds", () => {
  test("completed requests become samples: gaps summed and counted, unknown cache as NaN", () => {
    const s = samplesOf([rec(0, 0), rec(1, 5, false), rec(2, 9, true, { cachedTokens: undefined })], 2);
    expect(s.durationS).toBe(2);
    expect(s.requests).toHaveLength(2);
    expect(s.requests[0]).toEqual({ ttftMs: 10, e2elMs: 20, outputTokens: 3, itlSumMs: 5, itlCount: 2, promptTokens: 100, cachedTokens: 50 });
    expect(s.requests[1]!.cachedTokens).toBeNaN();
  });

  test("sides in the order they first ran, rounds in order", () => {
    const runs = [run("kv", 1, 0, [rec(0, 0)]), run("rr", 1, 0, [rec(0, 0)]), run("kv", 2, 0, [rec(0, 0)])];
    expect(sidesOf(runs).map((s) => [s.label, s.runs.map((r) => r.round)])).toEqual([["kv", [1, 2]], ["rr", [1]]]);
  });

  test("rounds pooled back to back: durations add, every request counted once, the worst client figures kept", () => {
    const a = run("kv", 1, 1000, [rec(0, 1000), rec(1, 1500)]);
    const b = run("kv", 2, 90_000, [rec(0, 90_000), rec(1, 90_400, false)]);
    const pooled = poolRounds({ label: "kv", runs: [a, b] }, [50]);
    expect(pooled.result.duration).toBeCloseTo(2, 10);
    expect(pooled.result.completed).toBe(3);
    expect(pooled.result.failed).toBe(1);
    expect(pooled.records.map((r) => r.sentMs)).toEqual([1000, 1500, 2000, 2400]);
    expect(pooled.result.client_event_loop_lag!.p99_ms).toBe(2);
    expect(pooled.result.client_cpu_share).toBeCloseTo(0.2, 10);
    expect(poolRounds({ label: "kv", runs: [a] }, [50])).toBe(a);
  });

  test("client timing: tokens read at once over gaps, gaps per completed request", () => {
    const t = clientTimingOf([rec(0, 0, true, { itlSameRead: 1 }), rec(1, 0), rec(2, 0, false)], { p99_ms: 3 });
    expect(t).toEqual({ lag: { p99_ms: 3 }, sameReadShare: 0.25, gapsPerRequest: 2 });
  });
});
