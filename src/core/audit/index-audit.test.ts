// Index accuracy from fake samples: exact agreement, a lossy index, blocks in transit between the
// two index reads, the empty cases, worst values per worker, and recovery after a fault's end.
import { describe, expect, test } from "bun:test";
import type { Residency } from "../../protocol/residency.ts";
import { auditPoint, compareCounts, recoveryTimes, worstPerWorker, type AuditPoint } from "./index-audit.ts";

function res(...sources: [worker: string, rank: number, device: number[]][]): Residency {
  return { sources: sources.map(([worker_id, dp_rank, device]) => ({ worker_id, dp_rank, tiers: { device: device.map((h) => ({ seq_hash: String(h), local_hash: "0" })), host: [], disk: [] } })) };
}

describe("compareCounts / auditPoint", () => {
  test("no workers at all: precision = recall = 1, no per-worker entries", () => {
    expect(auditPoint({ t_s: 2, truth: res(), indexBefore: res(), indexAfter: res() })).toEqual({ t_s: 2, precision: 1, recall: 1, workers: {} });
  });

  test("identical index and truth: precision = recall = 1", () => {
    const r = res(["w0", 0, [1, 2, 3]], ["w1", 0, [4]]);
    const p = auditPoint({ t_s: 1, truth: r, indexBefore: r, indexAfter: r });
    expect(p).toEqual({ t_s: 1, precision: 1, recall: 1, workers: { w0: { precision: 1, recall: 1 }, w1: { precision: 1, recall: 1 } } });
  });

  test("missing and extra blocks lower recall and precision; ranks of a worker are summed", () => {
    const truth = res(["w0", 0, [1, 2, 3, 4]], ["w0", 1, [5, 6, 7, 8]]);
    const index = res(["w0", 0, [1, 2, 3, 9]], ["w0", 1, [5, 6, 7, 8]]);
    const c = compareCounts(truth, index).get("w0")!;
    expect(c).toEqual({ index: 8, truth: 8, agreed: 7 });
    const p = auditPoint({ t_s: 0, truth, indexBefore: index, indexAfter: index });
    expect(p.precision).toBe(0.875);
    expect(p.recall).toBe(0.875);
  });

  test("a block the two index reads disagree on is taken as the truth has it (in transit)", () => {
    const truth = res(["w0", 0, [1, 2, 3]]);
    const before = res(["w0", 0, [1, 2, 4]]); // 3 not yet arrived, 4 not yet removed
    const after = res(["w0", 0, [1, 2, 3]]);
    expect(auditPoint({ t_s: 0, truth, indexBefore: before, indexAfter: after }).precision).toBe(1);
    expect(auditPoint({ t_s: 0, truth, indexBefore: before, indexAfter: after }).recall).toBe(1);
    // Both reads agree on a wrong block: counted.
    expect(auditPoint({ t_s: 0, truth, indexBefore: before, indexAfter: before }).recall).toBeCloseTo(2 / 3, 4);
  });

  test("empty denominators count as 1; a holder only one side knows counts against the other", () => {
    expect(auditPoint({ t_s: 0, truth: res(["w0", 0, []]), indexBefore: res(), indexAfter: res() }).workers.w0).toEqual({ precision: 1, recall: 1 });
    const p = auditPoint({ t_s: 0, truth: res(["w0", 0, [1, 2]]), indexBefore: res(), indexAfter: res() });
    expect(p.workers.w0).toEqual({ precision: 1, recall: 0 });
  });
});

const point = (t_s: number, precision: number, recall: number, worker = "w0"): AuditPoint => ({ t_s, precision, recall, workers: { [worker]: { precision, recall } } });

describe("worstPerWorker / recoveryTimes", () => {
  const points = [point(0, 1, 1), point(1, 0.9, 0.95), point(2, 0.8, 0.97), point(3, 0.995, 0.99), point(4, 1, 1)];

  test("the worst value per worker and when it was seen", () => {
    expect(worstPerWorker(points)).toEqual({ w0: { precision: 0.8, recall: 0.95, precision_t_s: 2, recall_t_s: 1 } });
  });

  test("recovery runs from the fault's end (or its application) to the first point with both ≥ 0.99", () => {
    expect(recoveryTimes(points, [{ applied_s: 0.5, ends_at_s: 1.5 }])).toEqual([1.5]);
    expect(recoveryTimes(points, [{ applied_s: 0.2, ends_at_s: null }])).toEqual([2.8]);
    expect(recoveryTimes(points.slice(0, 3), [{ applied_s: 0.5, ends_at_s: 1 }])).toEqual([null]);
  });
});
