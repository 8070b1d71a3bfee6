import { describe, expect, test } from "bun:test";
import { judgeLag, lagWarning, monitorEventLoopLag } from "./event-loop-lag.ts";

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
});
