import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { ReadinessError } from "../../lib/errors.ts";
import { tempDir, waitFor } from "../../../test/harness.ts";
import { describeExit, Supervisor, type RestartEvent } from "./supervisor.ts";

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

  test("restartOnFailure: a child that exits unasked is restarted after a doubling backoff, through its gate, until one exit past maxRestarts is the failure with its last stderr lines", async () => {
    await using sup = new Supervisor(["m"], { write: () => {} });
    const first = sup.spawn("m", sh("exec sleep 30"));
    const events: RestartEvent[] = [];
    const probed: number[] = [];
    const gate = { what: "always ready", probe: async () => void probed.push(1), timeoutMs: 5_000, intervalMs: 20 };
    const policy = { maxRestarts: 2, windowMs: 60_000, backoffMs: 10, backoffMaxMs: 15, stableMs: 60_000 };
    sup.restartOnFailure(first, sh("echo first line >&2; echo broken config >&2; exit 3"), gate, policy, { onRestart: (e) => events.push(e) });
    first.signal("SIGKILL");
    const failed = await sup.failure;
    expect(events.map((e) => [e.attempt, e.delayMs, describeExit(e.exit)])).toEqual([[1, 10, "was killed by SIGKILL"], [2, 15, "exited with code 3"]]);
    expect([describeExit(failed), failed.restarts, failed.stderrTail]).toEqual(["exited with code 3", 2, ["first line", "broken config"]]);
    expect(sup.children).toHaveLength(1); // each restart replaced the exited child: only the last one is kept
  });

  test("restartOnFailure: a restarted child that passes its gate is handed to onReady with its restart count; stop() during a backoff starts nothing", async () => {
    const sup = new Supervisor(["m"], { write: () => {} });
    const first = sup.spawn("m", sh("exec sleep 30"));
    const ready: [number, number][] = [];
    const gate = { what: "always ready", probe: async () => {}, timeoutMs: 5_000, intervalMs: 20 };
    sup.restartOnFailure(first, sh("exec sleep 30"), gate, { maxRestarts: 5, windowMs: 60_000, backoffMs: 10, backoffMaxMs: 30_000, stableMs: 60_000 }, { onReady: (c, n) => ready.push([c.pid, n]) });
    first.signal("SIGKILL");
    await waitFor(() => ready.length === 1, { what: "the restarted child to be ready" });
    const second = sup.children[0]!; // the restarted child replaced the first in the list
    expect(ready).toEqual([[second.pid, 1]]);
    expect(second.running).toBe(true);
    const restarted = new Promise<void>((r) => sup.restartOnFailure(second, sh("exec sleep 30"), gate, { maxRestarts: 5, windowMs: 60_000, backoffMs: 60_000, backoffMaxMs: 60_000, stableMs: 60_000 }, { onRestart: () => r() }));
    second.signal("SIGKILL");
    await restarted; // now waiting 60 s before the next start
    const t0 = performance.now();
    await sup.stop(1_000);
    expect(performance.now() - t0).toBeLessThan(5_000);
    expect(sup.children).toEqual([second]);
  });
});
