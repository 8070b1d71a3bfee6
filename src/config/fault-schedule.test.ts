// Fault schedules: YAML and JSON files, durations, targets, kill / restart, sorted by time, and a
// message naming the entry and field for every kind of bad input.
import { describe, expect, test } from "bun:test";
import { ConfigError } from "../lib/errors.ts";
import { faultDurationS, loadSchedule, parseAt, parseSchedule, parseTarget } from "./fault-schedule.ts";

function problems(text: string, path = "s.yaml"): string[] {
  try {
    parseSchedule(text, path);
  } catch (err) {
    if (err instanceof ConfigError) return [...err.problems];
    throw err;
  }
  throw new Error("expected a ConfigError");
}

describe("parseSchedule", () => {
  test("YAML entries become faults, kills and restarts, sorted by time", () => {
    const entries = parseSchedule(
      ["- at: 30s", "  target: worker 1 rank 0", "  fault: {kind: drop_batches, share: 0.1, renumber: true, for: 10}", "- at: 500ms", "  target: frontend", "  fault: restart", "- {at: 2, target: worker kvcr-slot-2, fault: kill}"].join("\n"),
      "s.yaml",
    );
    expect(entries.map((e) => [e.entry, e.atS, e.targetText, e.action.kind])).toEqual([
      [2, 0.5, "frontend", "restart"],
      [3, 2, "worker kvcr-slot-2", "kill"],
      [1, 30, "worker 1 rank 0", "fault"],
    ]);
    expect(entries[2]!.target).toEqual({ role: "worker", worker: 1, rank: 0 });
    expect(entries[2]!.action).toEqual({ kind: "fault", fault: { kind: "drop_batches", start: 0, for: 10, share: 0.1, renumber: true } });
    expect(faultDurationS(entries[2]!.action)).toBe(10);
  });

  test("JSON by extension", () => {
    expect(parseSchedule('[{"at": 1, "target": "worker 0", "fault": {"kind": "clear_all"}}]', "s.json")[0]!.action.kind).toBe("fault");
    // A bare kind is short for {kind: …}, as docs/up.md writes it; a bare unknown word names the kinds.
    expect(parseSchedule("- {at: 1, target: worker 0, fault: clear_all}", "s.yaml")[0]!.action).toEqual(parseSchedule("- {at: 1, target: worker 0, fault: {kind: clear_all}}", "s.yaml")[0]!.action);
    expect(problems("- {at: 1, target: worker 0, fault: explode}")[0]).toMatch(/^--faults s\.yaml: entry 1: fault\.kind: expected one of drop_batches/);
  });

  test("durations and targets", () => {
    expect([parseAt("2m"), parseAt("1.5s"), parseAt("250ms"), parseAt(3), parseAt("soon"), parseAt(-1)]).toEqual([120, 1.5, 0.25, 3, undefined, undefined]);
    expect(parseTarget("agent")).toEqual({ role: "agent" });
    expect(parseTarget("worker 3 rank 1")).toEqual({ role: "worker", worker: 3, rank: 1 });
    expect(parseTarget("worker 3 rank")).toBeUndefined();
  });

  test("bad entries: every problem names the entry and the field", () => {
    expect(problems("- {at: soon, target: wrk, fault: {kind: nope}}")).toEqual([
      expect.stringMatching(/^--faults s\.yaml: entry 1: at: got "soon"/),
      expect.stringMatching(/^--faults s\.yaml: entry 1: target: got "wrk", expected "worker W \[rank R\]"/),
      expect.stringMatching(/^--faults s\.yaml: entry 1: fault\.kind: expected one of drop_batches/),
    ]);
    expect(problems("- {at: 1, target: worker 0, fault: {kind: clear_all}}\n- {at: 1, target: agent, fault: {kind: clear_all}}")).toEqual(["--faults s.yaml: entry 2: fault: only mockers take faults; the agent takes kill or restart"]);
    expect(problems("- {at: 1, target: worker 0, fault: {kind: drop_batches, share: 2}}")[0]).toMatch(/entry 1: fault\.share: /);
    expect(problems("- {at: 1, target: worker 0, fault: {kind: clear_all, bogus: 1}}")).toEqual(["--faults s.yaml: entry 1: fault.bogus: not a field of clear_all faults"]);
    expect(problems("- {at: 1, target: worker 0, fault: {kind: clear_all, target: {worker: 1}}}")[0]).toMatch(/entry 1: fault\.target: give the target in the entry's target/);
    expect(problems("- {at: 1, target: worker 0, fault: kill, extra: 2}")).toEqual(["--faults s.yaml: entry 1: extra: not a field of a schedule entry (at, target, fault)"]);
    expect(problems("- {at: 1, target: worker 0}")[0]).toMatch(/entry 1: fault: /);
    expect(problems("{a: 1}")).toEqual(["--faults s.yaml: expected a list of {at, target, fault} entries, got object"]);
    expect(problems("- [")[0]).toMatch(/^--faults s\.yaml: not valid YAML: /);
    expect(problems("{", "s.json")[0]).toMatch(/^--faults s\.json: not valid JSON: /);
  });

  test("an unreadable file is named", () => {
    expect(() =>
      loadSchedule("/nope.yaml", () => {
        throw new Error("ENOENT");
      }),
    ).toThrow("--faults /nope.yaml: cannot read it: ENOENT");
  });
});
