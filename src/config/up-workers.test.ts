// `up --num-workers`: the stack's total, the same word mocker, replay and bench use, spread over
// --mocker-processes; --workers-per-process still says it per process.
import { describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { tempDir, thrownBy } from "../../test/harness.ts";
import { ConfigError } from "../lib/errors.ts";
import { globalWorkers, upConfigFrom } from "./up.ts";

const problems = (argv: string[]) => thrownBy(ConfigError, () => upConfigFrom(argv)).problems;

describe("up --num-workers", () => {
  test("the total, spread evenly over the mocker processes", () => {
    expect(upConfigFrom(["--num-workers", "4"])).toMatchObject({ mockerProcesses: 1, workersPerProcess: 4 });
    const c = upConfigFrom(["--num-workers", "6", "--mocker-processes", "3"]);
    expect([c.workersPerProcess, globalWorkers(c)]).toEqual([2, 6]);
  });

  test("without it, --workers-per-process (default 2) per process, as before", () => {
    expect(upConfigFrom([]).workersPerProcess).toBe(2);
    expect(globalWorkers(upConfigFrom(["--mocker-processes", "2", "--workers-per-process", "3"]))).toBe(6);
  });

  test("a total that does not divide is refused, naming both flags", () => {
    expect(problems(["--num-workers", "5", "--mocker-processes", "2"])).toEqual([
      "--num-workers: 5 workers do not spread evenly over --mocker-processes 2; give a multiple of 2, or --workers-per-process",
    ]);
  });

  test("both spellings given must agree", () => {
    expect(upConfigFrom(["--num-workers", "4", "--mocker-processes", "2", "--workers-per-process", "2"]).workersPerProcess).toBe(2);
    // Also when the per-process count given equals its default.
    expect(problems(["--num-workers", "8", "--mocker-processes", "2", "--workers-per-process", "2"])).toEqual([
      "--num-workers: 8 over --mocker-processes 2 is 4 per process, but --workers-per-process is 2; give one of the two",
    ]);
  });

  test("the stack file's num_workers, and the cross-field checks see the spread", () => {
    const file = "stack:\n  num_workers: 4\n  mocker_processes: 2\n";
    const c = upConfigFromFile(file);
    expect([c.workersPerProcess, globalWorkers(c)]).toEqual([2, 4]);
    // 4 workers × dp 1 from port 65533 runs past 65535: the check counts the total.
    expect(problems(["--num-workers", "4", "--zmq-kv-events-ports", "65533"]).join("\n")).toContain("base 65533 + 4 ranks");
  });
});

function upConfigFromFile(text: string) {
  using dir = tempDir("kvcr-up-workers-");
  const path = join(dir.path, "stack.yaml");
  writeFileSync(path, text);
  return upConfigFrom(["--config", path]);
}
