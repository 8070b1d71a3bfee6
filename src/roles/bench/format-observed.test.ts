// The human summary under a run's result block: faults with their recovery, worst accuracy per
// worker, regret; nothing for a run that observed nothing.
import { describe, expect, test } from "bun:test";
import { formatObserved } from "./format-observed.ts";
import type { ObservedResult } from "./bench-types.ts";

describe("formatObserved", () => {
  test("faults, accuracy and regret", () => {
    const r = {
      faults: [
        { entry: 1, at_s: 1, applied_s: 1, applied_at: "x", target: "worker 0", kind: "drop_batches", id: "f-1", ends_at_s: 3 },
        { entry: 2, at_s: 2, applied_s: 2, applied_at: "x", target: "agent", kind: "kill", id: null, ends_at_s: null, error: "kill needs a stack this command started" },
      ],
      recovery_s: [{ entry: 1, target: "worker 0", kind: "drop_batches", from_s: 3, recovery_s: 1.5 }],
      audit: { interval_s: 0.5, tier: "device", index_available: true, failed_reads: 0, points: [], worst: { w0: { precision: 1, recall: 0.9, precision_t_s: 0, recall_t_s: 2 } } },
      regret: { requests: 10, best_cache_share: 0.9, mean_blocks: 0.5, p99_blocks: 4, mean_prefill_ms: 0, p99_prefill_ms: 0, histogram: [], interval_s: 0.5 },
    } as unknown as ObservedResult;
    const out = formatObserved(r);
    expect(out).toMatch(/^1 +1\.00 +3\.00 +drop_batches +worker 0 +1\.50$/m);
    expect(out).toMatch(/^2 +2\.00 +- +kill +agent +not applied: kill needs a stack this command started$/m);
    expect(out).toMatch(/^w0 +1\.0000 +0\.9000$/m);
    expect(out).toContain("Routing regret: 10 requests, 90.0 % routed to the best cache, mean 0.50 / p99 4.00 blocks lost");
    expect(formatObserved({} as ObservedResult)).toBe("");
  });
});
