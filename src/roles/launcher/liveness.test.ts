// The liveness watch: silence bookkeeping on a given clock; the loop reporting only the silent child
// (not one that is not up, not one up itself was too stalled to hear); and with real processes, a
// SIGSTOPped child SIGKILLed through the supervisor and restarted by its policy, its exit saying
// it hung; without a policy, that kill is the stack's failure.
import { describe, expect, test } from "bun:test";
import { resolve } from "node:path";
import { FIXTURES_DIR, heldPort, pidAlive, waitFor } from "../../../test/harness.ts";
import { probeIntervalMs, SilenceTracker, watchLiveness, type LivenessTarget } from "./liveness.ts";
import { describeExit, Supervisor, type RestartEvent } from "./supervisor.ts";

describe("SilenceTracker", () => {
  test("a child is hung once silent for the timeout; an answer, a new pid or up's own stall starts the count afresh", () => {
    const t = new SilenceTracker(5000);
    t.watch("agent", 10, 0);
    expect(t.hungFor("agent", 10, 4999)).toBeUndefined();
    expect(t.hungFor("agent", 10, 5000)).toBe(5000);
    t.answered("agent", 10, 3000);
    expect(t.hungFor("agent", 10, 7999)).toBeUndefined();
    expect(t.hungFor("agent", 10, 8500)).toBe(5500);
    t.answered("agent", 9, 8000); // an answer of an older pid does not count
    expect(t.hungFor("agent", 10, 8500)).toBe(5500);
    t.watch("agent", 11, 9000); // restarted: tracked afresh, the old pid is not asked about
    expect(t.hungFor("agent", 10, 20_000)).toBeUndefined();
    expect(t.hungFor("agent", 11, 13_999)).toBeUndefined();
    t.excuse(12_000);
    expect(t.hungFor("agent", 11, 16_999)).toBeUndefined();
    expect(t.hungFor("agent", 11, 17_000)).toBe(5000);
    t.forget("agent");
    expect(t.hungFor("agent", 11, 99_000)).toBeUndefined();
  });

  test("probes go out once a second, or twice per timeout when that is shorter", () => {
    expect([probeIntervalMs(5000), probeIntervalMs(2000), probeIntervalMs(1000)]).toEqual([1000, 1000, 500]);
  });
});

describe("watchLiveness", () => {
  const targets: LivenessTarget[] = [
    { name: "agent", url: "http://agent/live" },
    { name: "mocker-0", url: "http://mocker/live" },
    { name: "frontend", url: "http://frontend/live" },
  ];

  test("only the silent child is reported, with its pid and silence; a child not up is not probed; up's own stall blames nobody", async () => {
    const clock = { now: 0 };
    let ticks = 0;
    const probed = new Set<string>();
    const hung: [string, number, number][] = [];
    const w = watchLiveness({
      targets,
      timeoutMs: 100, // ticks every 50 ms of real time; silence is measured on the test's clock
      upChild: (name) => {
        if (name === "agent") ticks++;
        return name === "frontend" ? undefined : { pid: name === "agent" ? 1 : 2 };
      },
      probe: async (url) => {
        probed.add(url);
        if (url === "http://mocker/live") throw new Error("no answer within the deadline");
      },
      hung: (t, pid, silentMs) => hung.push([t.name, pid, silentMs]),
      now: () => clock.now,
    });
    try {
      const nextTick = async () => {
        const n = ticks;
        await waitFor(() => ticks > n, { what: "a tick of the watch" });
      };
      // up itself stalled for 10 s (a tick that late): nobody is blamed for it.
      clock.now += 10_000;
      await nextTick();
      expect(hung).toEqual([]);
      for (let i = 0; i < 10 && hung.length === 0; i++) {
        clock.now += 40;
        await nextTick();
      }
      expect(hung.map(([name, pid]) => [name, pid])).toEqual([["mocker-0", 2]]);
      expect(hung[0]![2]).toBeGreaterThanOrEqual(100);
      expect([...probed].sort()).toEqual(["http://agent/live", "http://mocker/live"]);
    } finally {
      w.stop();
    }
  });
});

describe("liveness with real processes", () => {
  test("without a restart policy, a hung child's kill is the stack's failure, saying it hung; a child not past its gate is never killed", async () => {
    await using sup = new Supervisor(["m", "n"], { write: () => {} });
    const m = sup.spawn("m", ["/bin/sh", "-c", "exec sleep 30"]);
    const n = sup.spawn("n", ["/bin/sh", "-c", "exec sleep 30"]);
    await sup.waitReady(m, { what: "nothing", probe: async () => {}, timeoutMs: 5_000, intervalMs: 20 });
    expect(sup.killHung("n", 5300)).toBeUndefined();
    expect(sup.killHung("m", 5300)).toBe(m);
    const failed = await sup.failure;
    expect([failed.name, describeExit(failed)]).toEqual(["m", "was killed by SIGKILL (hung: no answer to its liveness probe for 5.3 s)"]);
    expect(n.running).toBe(true);
  });

  test("a SIGSTOPped child is SIGKILLed through the supervisor and restarted by its policy; its exit says it hung", async () => {
    const held = heldPort();
    const port = held.port;
    held.close();
    const url = `http://127.0.0.1:${port}/live`;
    const argv = [process.execPath, resolve(FIXTURES_DIR, "fake-role.ts"), "--port", String(port)];
    const gate = {
      what: url,
      probe: async () => {
        if ((await fetch(url, { signal: AbortSignal.timeout(1000) })).status !== 200) throw new Error("not live");
      },
      timeoutMs: 10_000,
      intervalMs: 50,
    };
    await using sup = new Supervisor(["agent"], { write: () => {} });
    const first = sup.spawn("agent", argv);
    let stopped: number | undefined;
    try {
      expect(sup.upChild("agent")).toBeUndefined(); // not past its readiness gate yet
      await sup.waitReady(first, gate);
      const events: RestartEvent[] = [];
      const ready: number[] = [];
      sup.restartOnFailure(first, argv, gate, { maxRestarts: 2, windowMs: 60_000, backoffMs: 10, backoffMaxMs: 10, stableMs: 60_000 }, { onRestart: (e) => events.push(e), onReady: (c) => ready.push(c.pid) });
      expect(sup.upChild("agent")).toBe(first);
      const hung: number[] = [];
      const w = watchLiveness({
        targets: [{ name: "agent", url }],
        timeoutMs: 1000,
        upChild: (name) => sup.upChild(name),
        hung: (t, _pid, silentMs) => {
          hung.push(silentMs);
          sup.killHung(t.name, silentMs);
        },
      });
      try {
        process.kill(first.pid, "SIGSTOP");
        stopped = first.pid;
        await waitFor(() => ready.length === 1, { timeoutMs: 15_000, what: "the hung child to be restarted and ready" });
        expect((await first.exited).signal).toBe("SIGKILL");
        expect(events.map((e) => [e.attempt, e.exit.pid])).toEqual([[1, first.pid]]);
        expect(describeExit(events[0]!.exit)).toMatch(/^was killed by SIGKILL \(hung: no answer to its liveness probe for \d+\.\d s\)$/);
        expect(hung).toHaveLength(1);
        expect(hung[0]).toBeGreaterThanOrEqual(1000);
        expect(sup.upChild("agent")?.pid).toBe(ready[0]);
      } finally {
        w.stop();
      }
    } finally {
      if (stopped !== undefined && pidAlive(stopped)) process.kill(stopped, "SIGKILL");
    }
  }, 30_000);
});
