// Index accuracy from samples (pure): how well a router's index (the frontend's `GET /v1/index`)
// matches the truth (every mocker's `GET /v1/residency`), per (worker, rank) by seq hash on one tier,
// summed per worker; the worst value per worker over a run; and each fault's recovery time.
// precision = |index ∩ truth| / |index|, recall = |index ∩ truth| / |truth|, each 1 when its
// denominator is 0 (an empty index of an empty rank is exact). Used by bench and up (docs/DECISIONS.md,
// "Audit and schedules").
import type { Residency, ResidencyHolder, ResidencyTier } from "../../protocol/residency.ts";

/** Both figures back at or above this count as recovered. */
export const RECOVERED = 0.99;

/** One audit read: the index read twice around the truth (see compareSources), at t_s seconds from the start. */
export interface AuditRead {
  t_s: number;
  truth: Residency;
  indexBefore: Residency;
  indexAfter: Residency;
}

export interface Accuracy {
  precision: number;
  recall: number;
}

export interface WorkerCounts {
  index: number;
  truth: number;
  agreed: number;
}

export interface AuditPoint extends Accuracy {
  t_s: number;
  /** Per worker id; the point's own precision / recall are the worst of them. */
  workers: Record<string, Accuracy>;
}

const key = (s: Pick<ResidencyHolder, "worker_id" | "dp_rank">) => `${s.worker_id}\u0000${s.dp_rank}`;

function setsByHolder(r: Residency, tier: ResidencyTier): Map<string, { worker: string; blocks: Set<string> }> {
  const out = new Map<string, { worker: string; blocks: Set<string> }>();
  for (const s of r.sources) {
    const k = key(s);
    const entry = out.get(k) ?? { worker: s.worker_id, blocks: new Set<string>() };
    for (const b of s.tiers[tier]) entry.blocks.add(b.seq_hash);
    out.set(k, entry);
  }
  return out;
}

/**
 * Counts per worker (its ranks summed). The index is read before and after the truth: a block on
 * which the two index reads differ was in transit (events travel mocker → agent → router in ms) and
 * is taken as the truth has it, so event transit is not counted as inaccuracy; a block both index
 * reads agree on is counted as they say.
 */
export function compareCounts(truth: Residency, indexBefore: Residency, indexAfter: Residency = indexBefore, tier: ResidencyTier = "device"): Map<string, WorkerCounts> {
  const t = setsByHolder(truth, tier);
  const a = setsByHolder(indexBefore, tier);
  const b = setsByHolder(indexAfter, tier);
  const out = new Map<string, WorkerCounts>();
  for (const k of new Set([...t.keys(), ...a.keys(), ...b.keys()])) {
    const worker = (t.get(k) ?? a.get(k) ?? b.get(k))!.worker;
    const truthSet = t.get(k)?.blocks ?? new Set<string>();
    const before = a.get(k)?.blocks ?? new Set<string>();
    const after = b.get(k)?.blocks ?? new Set<string>();
    let index = 0;
    let agreed = 0;
    for (const h of new Set([...before, ...after])) {
      const held = before.has(h) && after.has(h) ? true : truthSet.has(h);
      if (!held) continue;
      index++;
      if (truthSet.has(h)) agreed++;
    }
    const c = out.get(worker) ?? { index: 0, truth: 0, agreed: 0 };
    c.index += index;
    c.truth += truthSet.size;
    c.agreed += agreed;
    out.set(worker, c);
  }
  return out;
}

export function accuracyOf(c: WorkerCounts): Accuracy {
  return { precision: c.index === 0 ? 1 : c.agreed / c.index, recall: c.truth === 0 ? 1 : c.agreed / c.truth };
}

/** One read → per-worker accuracy and the worst of them. */
export function auditPoint(read: AuditRead, tier: ResidencyTier = "device"): AuditPoint {
  const workers: Record<string, Accuracy> = {};
  let precision = 1;
  let recall = 1;
  const counts = [...compareCounts(read.truth, read.indexBefore, read.indexAfter, tier)].sort(([x], [y]) => x.localeCompare(y, "en", { numeric: true }));
  for (const [worker, c] of counts) {
    const a = accuracyOf(c);
    workers[worker] = { precision: round(a.precision), recall: round(a.recall) };
    precision = Math.min(precision, a.precision);
    recall = Math.min(recall, a.recall);
  }
  return { t_s: round(read.t_s), precision: round(precision), recall: round(recall), workers };
}

export interface WorstAccuracy extends Accuracy {
  /** When each worst value was first seen (seconds from the start). */
  precision_t_s: number;
  recall_t_s: number;
}

/** Per worker, its lowest precision and recall over the points. */
export function worstPerWorker(points: readonly AuditPoint[]): Record<string, WorstAccuracy> {
  const out: Record<string, WorstAccuracy> = {};
  for (const p of points) foldWorst(out, p);
  return out;
}

/** Folds one point into per-worker worsts (a run that keeps no points keeps this instead). */
export function foldWorst(out: Record<string, WorstAccuracy>, p: AuditPoint): void {
  for (const [w, a] of Object.entries(p.workers)) {
    const cur = (out[w] ??= { precision: a.precision, recall: a.recall, precision_t_s: p.t_s, recall_t_s: p.t_s });
    if (a.precision < cur.precision) [cur.precision, cur.precision_t_s] = [a.precision, p.t_s];
    if (a.recall < cur.recall) [cur.recall, cur.recall_t_s] = [a.recall, p.t_s];
  }
}

/** What recovery is measured from: the fault's end (start + for) where it has one, else when it was applied. */
export interface FaultTiming {
  applied_s: number;
  ends_at_s: number | null;
}

/**
 * Seconds from each fault's end (or its application, when it has no known end) to the first point
 * at or after it where every worker's precision and recall are ≥ RECOVERED; null when none is.
 */
export function recoveryTimes(points: readonly AuditPoint[], faults: readonly FaultTiming[], threshold = RECOVERED): (number | null)[] {
  const found: (number | null)[] = faults.map(() => null);
  for (const p of points) foldRecoveries(found, p, faults, threshold);
  return found;
}

/** Folds one point (in time order) into `found`: each fault not yet recovered that this point recovers. */
export function foldRecoveries(found: (number | null)[], p: AuditPoint, faults: readonly FaultTiming[], threshold = RECOVERED): void {
  if (p.precision < threshold || p.recall < threshold) return;
  faults.forEach((f, i) => {
    const from = f.ends_at_s ?? f.applied_s;
    if ((found[i] ?? null) === null && p.t_s >= from) found[i] = round(p.t_s - from);
  });
}

function round(x: number): number {
  return Math.round(x * 10_000) / 10_000;
}
