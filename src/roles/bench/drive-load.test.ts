import { describe, expect, test } from "bun:test";
import type { WorkloadRequest } from "../../core/workload/workload.ts";
import { driveLoad, type LoadDeps } from "./drive-load.ts";
import type { RequestRecord } from "./send-request.ts";

const req = (t: number): WorkloadRequest => ({ timestampMs: t, inputLength: 4, outputLength: 2, writeTokens: () => {} });

/** A virtual clock: sleep and each request's service time advance it; no real time passes. */
function fake(serviceMs: number) {
  let now = 0;
  const sent: number[] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  const deps: LoadDeps = {
    now: () => now,
    sleep: async (ms) => {
      now += ms;
    },
    send: async (r) => {
      sent.push(r.timestampMs);
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      await Promise.resolve();
      now += serviceMs;
      inFlight--;
      const rec: RequestRecord = { ok: true, sentMs: now - serviceMs, ttftMs: 1, itlMs: [], e2elMs: serviceMs, promptTokens: 4, outputTokens: 2 };
      return rec;
    },
  };
  return { deps, sent, maxInFlight: () => maxInFlight };
}

describe("driveLoad", () => {
  test("closed loop keeps at most N in flight and sends every request once", async () => {
    const f = fake(5);
    const w = Array.from({ length: 10 }, (_, i) => req(i));
    const r = await driveLoad({ workload: w, arrival: { kind: "concurrency", concurrency: 3 }, seed: 0, warmupRequests: 0 }, f.deps);
    expect(r.records.length).toBe(10);
    expect(f.maxInFlight()).toBe(3);
    expect(new Set(r.records.map((x) => x.index)).size).toBe(10);
    expect(Math.max(...r.records.map((x) => x.inFlightAtSend))).toBe(3);
  });

  test("a trace run keeps its timestamps (÷ speedup) after warm-up requests that are not recorded", async () => {
    const f = fake(0);
    const w = [req(0), req(1000), req(3000)];
    const r = await driveLoad({ workload: w, arrival: { kind: "trace", speedupRatio: 2 }, seed: 0, warmupRequests: 2 }, f.deps);
    expect(f.sent).toEqual([0, 1000, 0, 1000, 3000]);
    expect(r.records.map((x) => x.index)).toEqual([0, 1, 2]);
    expect(r.warmup).toEqual({ sent: 2, failed: 0 });
    expect(r.endMs - r.startMs).toBe(1500);
  });

  const hundred = () => Array.from({ length: 100 }, (_, i) => req(i));

  test("--duration stops sending", async () => {
    const f = fake(10);
    const w = hundred();
    const r = await driveLoad({ workload: w, arrival: { kind: "concurrency", concurrency: 1 }, seed: 0, warmupRequests: 0, durationMs: 35 }, f.deps);
    expect(r.records.length).toBe(4);
    expect(r.cutShort).toBe(true);
  });

  test("a stop signal already given sends nothing", async () => {
    const w = hundred();
    const stop = new AbortController();
    stop.abort();
    const s = await driveLoad({ workload: w, arrival: { kind: "rate", requestsPerSecond: 10 }, seed: 0, warmupRequests: 0 }, { ...fake(1).deps, stop: stop.signal });
    expect(s.records.length).toBe(0);
  });

  test("a stop during a long wait for the next arrival ends the wait at once", async () => {
    const later = new AbortController();
    const slow = fake(1);
    let slept = 0;
    const w2 = [req(0), req(3_600_000)];
    const t = await driveLoad(
      { workload: w2, arrival: { kind: "trace", speedupRatio: 1 }, seed: 0, warmupRequests: 0 },
      { ...slow.deps, sleep: () => new Promise<void>((resolve) => void (slept++, later.abort(), setTimeout(resolve, 60_000).unref())), stop: later.signal },
    );
    expect([t.records.length, slept, t.cutShort]).toEqual([1, 1, true]);
  });

  test("a schedule under maxInFlight: never more in flight, every arrival sent once (late when none could go)", async () => {
    const f = fake(50);
    // All ten due at 0 (vLLM's --request-rate inf with --max-concurrency 2).
    const w = Array.from({ length: 10 }, () => req(0));
    const r = await driveLoad({ workload: w, arrival: { kind: "trace", speedupRatio: 1 }, seed: 0, warmupRequests: 0, maxInFlight: 2 }, f.deps);
    expect(r.records.length).toBe(10);
    expect(f.maxInFlight()).toBe(2);
    expect(Math.max(...r.records.map((x) => x.inFlightAtSend))).toBe(2);
    expect(new Set(r.records.map((x) => x.index)).size).toBe(10);
  });
});
