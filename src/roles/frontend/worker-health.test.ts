// Ejection bookkeeping on a fake clock: streaks, immediate ejection, backoff 1 s doubling to 30 s,
// reset by a successful request, and the /health probe that brings a worker back.
import { describe, expect, test } from "bun:test";
import { EJECT_BACKOFF_MS, WorkerHealth } from "./worker-health.ts";

describe("WorkerHealth", () => {
  test("three failures in a row eject; a success in between starts the streak over", () => {
    const h = new WorkerHealth(3);
    expect([h.failure("a", 0), h.failure("a", 0)]).toEqual([false, false]);
    h.success("a");
    expect([h.failure("a", 0), h.failure("a", 0), h.isEjected("a")]).toEqual([false, false, false]);
    expect(h.failure("a", 0)).toBe(true);
    expect([h.isEjected("a"), h.ejectedCount, h.ejections.failures]).toEqual([true, 1, 1]);
  });

  test("a worker reported down is ejected at once", () => {
    const h = new WorkerHealth(3);
    expect(h.down("a", 0)).toBe(true);
    expect(h.down("a", 0)).toBe(false); // already out
    expect(h.ejections).toEqual({ failures: 0, down: 1, stalled: 0 });
  });

  test("a stalled worker whose /health did not answer is ejected at once, counted as stalled", () => {
    const h = new WorkerHealth(3);
    expect(h.down("a", 0, "stalled")).toBe(true);
    expect([h.isEjected("a"), h.ejections]).toEqual([true, { failures: 0, down: 0, stalled: 1 }]);
  });

  test("the probe waits out the backoff, doubles it while /health fails, and brings the worker back on 200", () => {
    const h = new WorkerHealth(1);
    h.down("a", 0);
    expect(h.due(999)).toEqual([]);
    expect(h.due(1000)).toEqual(["a"]);
    expect(h.due(1000)).toEqual([]); // handed out once until probed
    expect(h.probed("a", false, 1000)).toBe(false);
    expect(h.nextProbeAtMs()).toBe(3000);
    expect(h.due(2999)).toEqual([]);
    expect(h.due(3000)).toEqual(["a"]);
    expect(h.probed("a", true, 3000)).toBe(true);
    expect([h.isEjected("a"), h.ejectedCount]).toEqual([false, 0]);
    // Ejected again before any success: the wait keeps growing.
    h.failure("a", 10_000);
    expect(h.nextProbeAtMs()).toBe(10_000 + 4000);
  });

  test("the backoff stops at 30 s and a successful request resets it to 1 s", () => {
    const h = new WorkerHealth(1);
    let now = 0;
    h.down("a", now);
    for (let i = 0; i < 10; i++) {
      now = h.nextProbeAtMs()!;
      h.due(now);
      h.probed("a", false, now);
    }
    expect(h.nextProbeAtMs()! - now).toBe(30_000); // a literal: reading EJECT_BACKOFF_MS would follow a broken constant
    expect(EJECT_BACKOFF_MS).toEqual({ first: 1000, max: 30_000 });
    now = h.nextProbeAtMs()!;
    h.due(now);
    h.probed("a", true, now);
    h.success("a");
    h.failure("a", now);
    expect(h.nextProbeAtMs()! - now).toBe(EJECT_BACKOFF_MS.first);
  });

  test("a worker that left discovery is forgotten, ejected or not", () => {
    const h = new WorkerHealth(1);
    h.down("a", 0);
    h.forget("a");
    expect([h.isEjected("a"), h.ejectedCount, h.due(1e9)]).toEqual([false, 0, []]);
  });
});
