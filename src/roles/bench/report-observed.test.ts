// The report's data for what a run observed: fault windows (applied → end, instant ones as a point,
// failed ones left out), the accuracy chart's two series per run on a shared time axis, and the
// regret histogram over the union of buckets; no chart without data.
import { describe, expect, test } from "bun:test";
import type { AppliedFault } from "../shared/stack/fault-runner.ts";
import type { AuditPoint } from "../../core/audit/index-audit.ts";
import type { RunObservation } from "./observe-run.ts";
import { accuracyChart, faultWindows, regretChart } from "./report-observed.ts";

const fault = (over: Partial<AppliedFault>): AppliedFault => ({ entry: 1, at_s: 1, applied_s: 1, applied_at: "2026-01-01T00:00:01.000Z", target: "worker 0", kind: "drop_batches", id: "f-1", ends_at_s: 3, ...over });
const point = (t_s: number, precision: number, recall: number): AuditPoint => ({ t_s, precision, recall, workers: {} });
const audit = (points: AuditPoint[]): RunObservation["audit"] => ({ interval_s: 1, tier: "device", index_available: true, failed_reads: 0, points, worst: {} });

describe("report data for faults, audit and regret", () => {
  test("fault windows per run", () => {
    const observed: RunObservation[] = [
      { faults: [fault({}), fault({ entry: 2, kind: "clear_all", applied_s: 4, ends_at_s: 4 }), fault({ entry: 3, error: "no worker 9" })] },
      { faults: [fault({ kind: "http_error", applied_s: 2, ends_at_s: null })] },
    ];
    expect(faultWindows(observed)).toEqual([
      { from_s: 1, to_s: 3, label: "drop_batches on worker 0", run: 0 },
      { from_s: 4, to_s: 4, label: "clear_all on worker 0", run: 0 },
      { from_s: 2, to_s: 2, label: "http_error on worker 0", run: 1 },
    ]);
  });

  test("accuracy: precision and recall per run over the union of sample times, with the windows", () => {
    const c = accuracyChart(["a", "b"], [{ audit: audit([point(0, 1, 1), point(1, 0.9, 0.8)]), faults: [fault({})] }, { audit: audit([point(0.5, 1, 0.5)]) }])!;
    expect(c.series).toEqual(["a precision", "a recall", "b precision", "b recall"]);
    expect(c.data).toEqual([
      [0, 0.5, 1],
      [1, null, 0.9],
      [1, null, 0.8],
      [null, 1, null],
      [null, 0.5, null],
    ]);
    expect(c.windows).toHaveLength(1);
    expect(accuracyChart(["a"], [{}])).toBeUndefined();
  });

  test("regret histogram over the union of buckets", () => {
    const summary = (histogram: { bucket_blocks: number; count: number }[]) => ({ requests: 1, best_cache_share: 1, mean_blocks: 0, p99_blocks: 0, mean_prefill_ms: 0, p99_prefill_ms: 0, interval_s: 1, histogram }) as unknown as RunObservation["regret"];
    const c = regretChart(["a", "b"], [{ regret: summary([{ bucket_blocks: 0, count: 5 }, { bucket_blocks: 2, count: 1 }]) }, { regret: summary([{ bucket_blocks: 1, count: 3 }]) }])!;
    expect(c.data).toEqual([
      [0, 1, 2],
      [5, 0, 1],
      [0, 3, 0],
    ]);
    expect(c.bars).toBe(true);
    expect(regretChart(["a"], [{ regret: null }])).toBeUndefined();
  });
});
