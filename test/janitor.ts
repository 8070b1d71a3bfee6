// Started by test/harness.ts, once per test process, in a process group of its own: it outlives
// that process however it ends (normal exit, a crash, SIGKILL, Ctrl-C), because `bun test` runs
// no exit handlers. Its stdin is a pipe from the test process; each line "+ PID" or "- PID" adds
// or removes a child process group the harness started, "d+ PATH" or "d- PATH" a directory made
// outside the temp root (makeShortTempDir). At end of input (the test process is gone) it SIGKILLs
// the groups still listed and removes the directories listed and the temp root (argv[2]).
import { rmSync } from "node:fs";

const root = process.argv[2];
const groups = new Set<number>();
const dirs = new Set<string>();
for await (const line of console) {
  const space = line.indexOf(" ");
  const [op, arg] = [line.slice(0, space), line.slice(space + 1)];
  if (op === "+") groups.add(Number(arg));
  else if (op === "-") groups.delete(Number(arg));
  else if (op === "d+") dirs.add(arg);
  else if (op === "d-") dirs.delete(arg);
}
for (const pgid of groups) {
  try {
    process.kill(-pgid, "SIGKILL");
  } catch {
    // already gone
  }
}
for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
if (root) rmSync(root, { recursive: true, force: true });
