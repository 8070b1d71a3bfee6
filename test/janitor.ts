// Started by test/harness.ts, once per test process, in a process group of its own: it outlives
// that process however it ends (normal exit, a crash, SIGKILL, Ctrl-C), because `bun test` runs
// no exit handlers. Its stdin is a pipe from the test process; each line "+ PID" or "- PID" adds
// or removes a child process group the harness started. At end of input (the test process is
// gone) it SIGKILLs the groups still listed and removes the test process's temp root (argv[2]).
import { rmSync } from "node:fs";

const root = process.argv[2];
const groups = new Set<number>();
for await (const line of console) {
  const [op, pid] = line.split(" ");
  if (op === "+") groups.add(Number(pid));
  else if (op === "-") groups.delete(Number(pid));
}
for (const pgid of groups) {
  try {
    process.kill(-pgid, "SIGKILL");
  } catch {
    // already gone
  }
}
if (root) rmSync(root, { recursive: true, force: true });
