import { expect, test } from "bun:test";
import { LiveLoop, type LoopEngine } from "./live-loop.ts";
import { waitFor } from "../../../test/harness.ts";

/** A fake engine: `work` steps left, each of `durationMs`, recording when steps ran and landed. */
function fakeEngine(work: number, durationMs: number, now: () => number) {
  const stepsAt: number[] = [];
  const deliveredAt: number[] = [];
  let left = work;
  const engine: LoopEngine<number> = {
    hasWork: () => left > 0,
    step: (t) => {
      stepsAt.push(t);
      left--;
      return { durationMs, result: t };
    },
    deliver: () => deliveredAt.push(now()),
  };
  return { engine, stepsAt, deliveredAt, addWork: (n: number) => (left += n) };
}

test("steps are spaced by their duration and results land after it", async () => {
  const t0 = performance.now();
  const now = () => performance.now() - t0;
  const loop = new LiveLoop<number>(now);
  try {
    const a = fakeEngine(3, 20, now);
    loop.wake(a.engine);
    await waitFor(() => a.deliveredAt.length === 3, { what: "the 3 results delivered" });
    expect(a.stepsAt).toHaveLength(3);
    for (let i = 1; i < 3; i++) expect(a.stepsAt[i]! - a.stepsAt[i - 1]!).toBeGreaterThanOrEqual(19);
    // Each result is delivered no earlier than its step's duration after the step.
    a.deliveredAt.forEach((d, i) => expect(d - a.stepsAt[i]!).toBeGreaterThanOrEqual(19));
  } finally {
    loop.close();
  }
});

test("zero-duration engines run round-robin and, with no turn budget, yield to I/O between rounds", async () => {
  let t = 0;
  const loop = new LiveLoop<number>(() => t, { turnBudgetMs: 0 });
  try {
    const a = fakeEngine(50, 0, () => t);
    const b = fakeEngine(50, 0, () => t);
    loop.wake(a.engine);
    loop.wake(b.engine);
    let ioTurns = 0;
    const deadline = performance.now() + 5000;
    while ((a.deliveredAt.length < 50 || b.deliveredAt.length < 50) && performance.now() < deadline) {
      ioTurns++;
      await new Promise((r) => setImmediate(r));
    }
    expect([a.stepsAt.length, b.stepsAt.length]).toEqual([50, 50]);
    expect(ioTurns).toBeGreaterThan(10);
  } finally {
    loop.close();
  }
});

test("an idle engine is woken by new work until the loop is closed", async () => {
  let t = 0;
  const loop = new LiveLoop<number>(() => t);
  const a = fakeEngine(0, 0, () => t);
  loop.wake(a.engine);
  await new Promise((r) => setImmediate(r));
  expect(a.stepsAt).toHaveLength(0);
  a.addWork(1);
  loop.wake(a.engine);
  const deadline = performance.now() + 2000;
  while (a.deliveredAt.length < 1 && performance.now() < deadline) await new Promise((r) => setImmediate(r));
  expect(a.deliveredAt).toHaveLength(1);
  loop.close();
  a.addWork(5);
  loop.wake(a.engine);
  // A closed loop arms nothing: several I/O turns later there is still no step.
  for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
  expect(a.stepsAt).toHaveLength(1);
});

test("due rounds run back to back within the turn budget, then the loop yields to I/O", async () => {
  // Wall clock advanced by the fake steps: each step "takes" 0.25 ms, so a 5 ms budget holds
  // 10 rounds of two engines (the check runs between rounds, so a turn may end one round late).
  let wall = 0;
  const loop = new LiveLoop<number>(() => 0, { turnBudgetMs: 5, wallMs: () => wall });
  try {
    const a = fakeEngine(100, 0, () => 0);
    const b = fakeEngine(100, 0, () => 0);
    for (const s of [a, b]) {
      const step = s.engine.step;
      s.engine.step = (t) => ((wall += 0.25), step(t));
    }
    loop.wake(a.engine);
    loop.wake(b.engine);
    const stepsPerTurn: number[] = [];
    const deadline = performance.now() + 5000;
    while (a.stepsAt.length + b.stepsAt.length < 200 && performance.now() < deadline) {
      const before = a.stepsAt.length + b.stepsAt.length;
      await new Promise((r) => setImmediate(r));
      stepsPerTurn.push(a.stepsAt.length + b.stepsAt.length - before);
    }
    expect([a.stepsAt.length, b.stepsAt.length]).toEqual([100, 100]);
    // Every turn that ran stayed within the budget (20 steps = 5 ms) and round-robin (even).
    const turns = stepsPerTurn.filter((n) => n > 0);
    expect(turns.length).toBeGreaterThanOrEqual(10);
    for (const n of turns) {
      expect(n).toBeLessThanOrEqual(20);
      expect(n % 2).toBe(0);
    }
    expect(Math.max(...turns)).toBe(20);
  } finally {
    loop.close();
  }
});

test("rounds not yet due are left to their timer even with budget left", async () => {
  let t = 0;
  const loop = new LiveLoop<number>(() => t, { turnBudgetMs: 1000, wallMs: () => 0 });
  try {
    const a = fakeEngine(3, 10, () => t);
    loop.wake(a.engine);
    await new Promise((r) => setImmediate(r));
    // One step at t = 0; its result is due at t = 10, which the frozen clock never reaches.
    await new Promise((r) => setImmediate(r));
    expect(a.stepsAt).toEqual([0]);
    expect(a.deliveredAt).toEqual([]);
  } finally {
    loop.close();
  }
});

test("a wake cuts an idle wait (a transfer in flight) short, but not a computing step", async () => {
  const t = 0;
  const loop = new LiveLoop<string>(() => t);
  const steps: string[] = [];
  let mode: "idle" | "compute" = "idle";
  let work = 1;
  const engine: LoopEngine<string> = {
    hasWork: () => work > 0,
    step: () => {
      steps.push(mode);
      // An idle step waits 10 s of loop time for a landing; a computing one takes 10 s too.
      return { durationMs: 10_000, result: mode, idle: mode === "idle" };
    },
    deliver: () => {},
  };
  try {
    loop.wake(engine);
    await waitFor(() => steps.length === 1, { what: "the first (idle) step" });
    mode = "compute";
    loop.wake(engine); // new work while waiting on the transfer: step now
    await waitFor(() => steps.length === 2, { what: "the woken step" });
    expect(steps).toEqual(["idle", "compute"]);
    loop.wake(engine); // the engine is computing: the request joins its next step, no extra step
    for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
    expect(steps).toEqual(["idle", "compute"]);
  } finally {
    work = 0;
    loop.close();
  }
});

test("a late timer does not push later steps back: each step starts at its intended due time (injected clock)", async () => {
  let t = 0;
  const loop = new LiveLoop<number>(() => t);
  try {
    const a = fakeEngine(6, 10, () => t);
    loop.wake(a.engine);
    await waitFor(() => a.stepsAt.length === 1, { what: "the first step" });
    // Every timer fires 3 ms of loop time late (the clock is already past the due time).
    for (let i = 1; i < 6; i++) {
      t = i * 10 + 3;
      await waitFor(() => a.stepsAt.length === i + 1, { what: `step ${i + 1}` });
    }
    expect(a.stepsAt).toEqual([0, 10, 20, 30, 40, 50]);
    expect(loop.droppedLagMs).toBe(0);
  } finally {
    loop.close();
  }
});

test("a loop far behind catches up from its due time, dropping only lag beyond maxLagMs", async () => {
  let t = 0;
  const loop = new LiveLoop<number>(() => t, { maxLagMs: 100, turnBudgetMs: 1000, wallMs: () => 0 });
  try {
    const a = fakeEngine(10, 10, () => t);
    loop.wake(a.engine);
    await waitFor(() => a.stepsAt.length === 1, { what: "the first step" });
    t = 45; // 35 ms late: the steps due at 10, 20, 30 and 40 run back to back
    await waitFor(() => a.stepsAt.length === 5, { what: "the catch-up steps" });
    expect(a.stepsAt).toEqual([0, 10, 20, 30, 40]);
    t = 10_000; // a stall: resume 100 ms before now instead of replaying 9.95 s of steps
    await waitFor(() => a.stepsAt.length === 10, { what: "the steps after the stall" });
    expect(a.stepsAt.slice(5)).toEqual([9_900, 9_910, 9_920, 9_930, 9_940]);
    expect(loop.droppedLagMs).toBe(10_000 - 100 - 50);
  } finally {
    loop.close();
  }
});
