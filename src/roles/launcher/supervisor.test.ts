import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { ReadinessError } from "../../lib/errors.ts";
import { tempDir, waitFor } from "../../../test/harness.ts";
import { describeExit, Supervisor } from "./supervisor.ts";

const sh = (script: string) => ["/bin/sh", "-c", script];
const never = { what: "a probe that never passes", probe: () => Promise.reject(new Error("connection refused")), intervalMs: 20 };

describe("Supervisor", () => {
  test("a child's output is written prefixed with its name (padded to the longest) and to --log-dir unprefixed", async () => {
    using dir = tempDir();
    const out: string[] = [];
    await using sup = new Supervisor(["agent", "mocker-10"], { write: (t) => out.push(t), logDir: join(dir.path, "logs") });
    const child = sup.spawn("agent", sh("echo one; echo two >&2; printf partial"));
    await child.exited;
    await child.drained;
    await sup.stop(1000);
    expect(out.sort()).toEqual(["agent     | one\n", "agent     | partial\n", "agent     | two\n"]);
    expect(readFileSync(join(dir.path, "logs", "agent.log"), "utf8").split("\n").sort()).toEqual(["", "one", "partial", "two"]);
  });

  test("a child gets the stdin lifeline: it ends when the supervisor closes it", async () => {
    await using sup = new Supervisor(["c"], { write: () => {} });
    const child = sup.spawn("c", sh('echo "lifeline=$KVCR_LIFELINE"; cat >/dev/null; echo eof'));
    child.proc.stdin.end();
    expect(await child.exited).toMatchObject({ code: 0, signal: null });
    await child.drained;
    expect(child.tail()).toEqual(["lifeline=stdin", "eof"]);
  });

  test("waitReady: a child that exits first is named with its exit status and last output", async () => {
    await using sup = new Supervisor(["agent"], { write: () => {} });
    const child = sup.spawn("agent", sh("echo cannot bind >&2; exit 3"));
    const err = await sup.waitReady(child, { ...never, timeoutMs: 10_000 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ReadinessError);
    expect((err as Error).message).toStartWith("agent exited with code 3 before it was ready (waiting for a probe that never passes");
    expect((err as Error).message).toEndWith("its last output:\n    cannot bind");
  });

  test("waitReady: past the deadline, the message names the timeout and the last probe error", async () => {
    await using sup = new Supervisor(["agent"], { write: () => {} });
    const child = sup.spawn("agent", sh("exec sleep 30"));
    const err = await sup.waitReady(child, { ...never, timeoutMs: 200 }).catch((e: unknown) => e as Error);
    expect((err as Error).message).toBe("agent did not become ready within 0.2 s (waiting for a probe that never passes); last probe: connection refused; it wrote no output");
  });

  test("the first child to exit unasked is the failure, after which stop() ends the rest with SIGTERM, then SIGKILL after the grace period", async () => {
    const out: string[] = [];
    const sup = new Supervisor(["a", "b", "c"], { write: (t) => out.push(t) });
    sup.spawn("a", sh("exec sleep 30"));
    sup.spawn("b", sh("exit 4"));
    const stubborn = sup.spawn("c", sh("trap 'echo ignoring TERM' TERM; echo ready; while :; do sleep 0.05; done"));
    const failed = await sup.failure;
    expect([failed.name, describeExit(failed)]).toEqual(["b", "exited with code 4"]);
    await waitFor(() => stubborn.tail().includes("ready"), { what: "c's trap to be set" });
    await sup.stop(300);
    expect(sup.children.map((c) => c.running)).toEqual([false, false, false]);
    expect((await stubborn.exited).signal).toBe("SIGKILL");
    expect(out).toContain("up: c still running after 0.3 s: SIGKILL\n");
    expect(() => sup.spawn("d", sh("true"))).toThrow("not starting d: the stack is stopping");
  });
});
