import { describe, expect, test } from "bun:test";
import { judgeLag, lagWarning, monitorEventLoopLag, saturationWarning } from "./event-loop-lag.ts";

describe("the load client's event-loop lag", () => {
  test("threshold: 10 % of the median ITL, kept within 1 to 5 ms", () => {
    expect(judgeLag([0, 0, 3], 20).threshold_ms).toBe(2);
    expect(judgeLag([0], 200).threshold_ms).toBe(5);
    expect(judgeLag([0], 2).threshold_ms).toBe(1);
    expect(judgeLag([0], NaN).threshold_ms).toBe(5);
    expect(judgeLag(Array(100).fill(0.5), 20).distorts_itl).toBe(false);
    const slow = judgeLag([...Array(95).fill(0.2), ...Array(5).fill(30)], 20);
    expect(slow).toMatchObject({ samples: 100, distorts_itl: true, max_ms: 30 });
    expect(lagWarning(slow)).toContain("the load client's event loop lagged");
    expect(lagWarning(judgeLag([0], 20))).toBeUndefined();
  });

  test("a blocked event loop is seen", async () => {
    const monitor = monitorEventLoopLag();
    // Block the loop three times for 40 ms, yielding in between so the timer can note it.
    for (let i = 0; i < 3; i++) {
      const until = performance.now() + 40;
      while (performance.now() < until) {
        // busy: the timer cannot fire
      }
      await new Promise((resolve) => setTimeout(resolve, 8));
    }
    const s = monitor.stop(20);
    expect(s.max_ms).toBeGreaterThanOrEqual(30);
    expect(s.distorts_itl).toBe(true);
  });

  test("a loop that never got to the timer is the worst lag, not none; stopping late counts the pending tick", async () => {
    let t = 0;
    const monitor = monitorEventLoopLag(() => t, () => ({ user: 0, system: 0 }));
    t = 3000; // the loop was busy for 3 s: no tick ran
    const s = monitor.stop(20);
    expect(s.samples).toBe(1);
    expect(s.max_ms).toBeCloseTo(2995, 6);
    expect(s.distorts_itl).toBe(true);
  });

  test("CPU share: the client's CPU time over the wall time, warned about near a whole core", () => {
    let t = 0;
    let cpuUs = 0;
    const monitor = monitorEventLoopLag(() => t, () => ({ user: cpuUs * 0.75, system: cpuUs * 0.25 }));
    t = 2000;
    cpuUs = 1_900_000; // 1.9 s of CPU in 2 s
    expect(monitor.cpuShare()).toBeCloseTo(0.95, 10);
    monitor.stop(20);
    expect(saturationWarning(0.95)).toContain("95 % of a CPU core");
    expect(saturationWarning(0.5)).toBeUndefined();
  });
});
