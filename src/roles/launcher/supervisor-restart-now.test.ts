// Supervisor.restartNow (a fault schedule's `restart`): the old child is stopped on request, a new
// one runs the same argv and passes the gate; the old exit is neither the stack's failure nor a
// restart counted by the policy.
import { describe, expect, test } from "bun:test";
import { Supervisor } from "./supervisor.ts";

const sh = (script: string) => ["/bin/sh", "-c", script];
const ready = { what: "nothing", probe: () => Promise.resolve(), intervalMs: 20, timeoutMs: 5_000 };

describe("Supervisor.restartNow", () => {
  test("without a restart policy: a new child, no failure", async () => {
    await using sup = new Supervisor(["m"], { write: () => {} });
    let failed = false;
    void sup.failure.then(() => (failed = true));
    const first = sup.spawn("m", sh("exec sleep 30"));
    const next = await sup.restartNow("m", sh("exec sleep 30"), ready, 2_000);
    expect(next.pid).not.toBe(first.pid);
    expect((await first.exited).signal).toBe("SIGTERM");
    expect(sup.current("m")).toBe(next);
    // The old child's exit handler has run (restartNow awaited its exit): it reported nothing.
    await Promise.resolve();
    expect(failed).toBe(false);
    expect(next.running).toBe(true);
  });

  test("under a restart policy: the policy keeps watching the new child and counted nothing", async () => {
    await using sup = new Supervisor(["m"], { write: () => {} });
    const first = sup.spawn("m", sh("exec sleep 30"));
    const restarts: number[] = [];
    sup.restartOnFailure(first, sh("exec sleep 30"), ready, { maxRestarts: 0, windowMs: 60_000, backoffMs: 10, backoffMaxMs: 10, stableMs: 60_000 }, { onRestart: (e) => restarts.push(e.attempt) });
    const next = await sup.restartNow("m", sh("exec sleep 30"), ready, 2_000);
    expect(restarts).toEqual([]);
    // With maxRestarts 0, the new child's own crash is the failure: the policy follows it.
    next.signal("SIGKILL");
    const failed = await sup.failure;
    expect([failed.name, failed.pid]).toEqual(["m", next.pid]);
  });
});
