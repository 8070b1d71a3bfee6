// The fault table on a hand-driven clock: start delays, `for` and `count` expiry, targets by index
// or worker id, hooks at start and end, instant kinds leaving at once, and a log line per change.
import { describe, expect, test } from "bun:test";
import { createLogger } from "../../../lib/logger.ts";
import { checkFault, type FaultSpec } from "../../../protocol/faults.ts";
import { FaultTable, type FaultClock } from "./fault-table.ts";

class FakeClock implements FaultClock {
  now = 1_000_000;
  private timers: { at: number; fn: () => void; id: number }[] = [];
  private nextId = 0;
  nowMs = () => this.now;
  setTimer = (fn: () => void, ms: number) => {
    const id = this.nextId++;
    this.timers.push({ at: this.now + ms, fn, id });
    return id;
  };
  clearTimer = (h: unknown) => {
    this.timers = this.timers.filter((t) => t.id !== h);
  };
  advance(ms: number): void {
    this.now += ms;
    for (;;) {
      const due = this.timers.filter((t) => t.at <= this.now).sort((a, b) => a.at - b.at)[0];
      if (!due) return;
      this.timers = this.timers.filter((t) => t !== due);
      due.fn();
    }
  }
}

function spec(body: object): FaultSpec {
  const r = checkFault(body);
  if (!r.ok) throw new Error(r.problem);
  return r.value;
}

function table() {
  const lines: string[] = [];
  const logger = createLogger({ level: "info" });
  logger.setReporters([{ log: (o) => lines.push(String(o.args[0])) }]);
  const clock = new FakeClock();
  const t = new FaultTable(["w-a", "w-b"], 2, logger, clock);
  const events: string[] = [];
  t.onChange({ started: (h) => events.push(`start ${h.view.id}`), ended: (h, why) => events.push(`end ${h.view.id} ${why}`) });
  return { t, clock, lines, events };
}

describe("fault table", () => {
  test("a fault with start and for is pending, then in effect for its targets, then expires", () => {
    const { t, clock, lines, events } = table();
    const added = t.add(spec({ kind: "pause", start: 2, for: 3, target: { worker: "w-b", rank: 1 } }));
    if (!added.ok) throw new Error(added.problem);
    expect(added.fault).toMatchObject({ id: "f-1", started_at_ms: 1_002_000 });
    expect(t.has("pause", 1, 1)).toBe(false);
    clock.advance(2000);
    expect([t.has("pause", 1, 1), t.has("pause", 1, 0), t.has("pause", 0, 1)]).toEqual([true, false, false]);
    expect(t.list()[0]).toMatchObject({ started_at_ms: 1_002_000, ends_at_ms: 1_005_000 });
    clock.advance(3000);
    expect(t.list()).toEqual([]);
    expect(events).toEqual(["start f-1", "end f-1 expired"]);
    expect(lines.some((l) => l.includes("fault f-1 pause applied at 1970-01-01T00:16:42.000Z on worker 1 (w-b) rank 1"))).toBe(true);
    expect(lines.some((l) => l.includes("fault f-1 pause ended (expired)"))).toBe(true);
  });

  test("count: each hit takes one; the last one ends the fault", () => {
    const { t, events } = table();
    t.add(spec({ kind: "http_error", count: 2 }));
    const f = t.find("http_error", 0, 0)!;
    t.hit(f);
    expect(t.list()[0]!.remaining).toBe(1);
    t.hit(f);
    expect(t.find("http_error", 0, 0)).toBeUndefined();
    expect(events).toEqual(["start f-1", "end f-1 count reached"]);
  });

  test("instant kinds act once and leave; delete ends one or all; a pending one never starts", () => {
    const { t, clock, events } = table();
    t.add(spec({ kind: "reset_seq" }));
    expect(t.list()).toEqual([]);
    t.add(spec({ kind: "stop_publishing" }));
    t.add(spec({ kind: "no_replay", start: 5 }));
    expect(t.remove("f-9")).toBe(false);
    expect(t.remove("f-2")).toBe(true);
    expect(t.removeAll()).toBe(1);
    clock.advance(10_000);
    expect(events).toEqual(["start f-1", "end f-1 done", "start f-2", "end f-2 deleted"]);
  });

  test("targets out of range are refused naming the field", () => {
    const { t } = table();
    expect(t.add(spec({ kind: "hang", target: { worker: 2 } }))).toMatchObject({ ok: false, problem: expect.stringMatching(/^target\.worker: no worker 2/) });
    expect(t.add(spec({ kind: "hang", target: { worker: "w-z" } }))).toMatchObject({ ok: false, problem: expect.stringMatching(/^target\.worker: no worker "w-z"/) });
    expect(t.add(spec({ kind: "hang", target: { rank: 2 } }))).toMatchObject({ ok: false, problem: expect.stringMatching(/^target\.rank:/) });
    expect(t.list()).toEqual([]);
  });
});
