// The audit's sampling loop (bench --audit-interval, up --audit): every interval, read the index
// (the frontend's GET /v1/index), every mocker's truth (GET /v1/residency), then the index again a
// moment later (core/audit/index-audit.ts explains why), and keep the point and the truth sample (regret uses
// them) unless told to keep nothing (up's audit runs for days: memory must stay flat). A router without /v1/index (another implementation) is audited on truth alone; a mocker
// that does not answer (killed) holds nothing.
import type { Logger } from "../../../lib/logger.ts";
import type { Residency } from "../../../protocol/residency.ts";
import { auditPoint, type AuditPoint } from "../../../core/audit/index-audit.ts";
import { mockerUrlsOf, readResidency, readTruths, type StackEndpoints } from "./stack-truth.ts";

/**
 * Events travel mocker → agent → router in a few ms: the second index read comes this long after
 * the truth, and again (doubling, up to INDEX_SETTLE_MAX_MS in all) while the point is short of 1 —
 * on a loaded machine transit can take longer. A block really missing from the index (or really
 * extra) is missing from every read, so waiting longer never hides it; it only lets events that were
 * in transit at the truth read arrive.
 */
export const INDEX_SETTLE_MS = 50;
const INDEX_SETTLE_MAX_MS = 400;

export interface TruthSample {
  t_s: number;
  truth: Residency;
  /** Requests waiting or running per (worker, rank), keyed "worker_id/dp_rank", where the truth says (load regret). */
  load?: Record<string, number>;
}

export interface AuditLog {
  interval_s: number;
  /** False when the router serves no /v1/index: no accuracy points, truth samples only. */
  index_available: boolean;
  points: AuditPoint[];
  truth: TruthSample[];
  /** Reads that failed as a whole (the index unreachable). */
  failed_reads: number;
}

export interface AuditLoopDeps {
  logger: Logger;
  /** Monotonic ms; t_s counts from startMs on it. */
  now(): number;
  endpoints: StackEndpoints;
  intervalS: number;
  /** Called with each point (up logs it). */
  onPoint?(p: AuditPoint): void;
  /**
   * False: keep no points and no truth samples (the log's lists stay empty), only hand each point
   * to onPoint — for `up --audit`, which runs for days and must not grow. Default true (bench).
   */
  keepSamples?: boolean;
  /** Called after each sample (up hands its garbage back to the collector there). */
  afterSample?(): void;
}

export interface AuditRun {
  /** Stops sampling, waits for a read in progress, returns everything sampled. */
  stop(): Promise<AuditLog>;
}

export function startAudit(startMs: number, deps: AuditLoopDeps): AuditRun {
  const log: AuditLog = { interval_s: deps.intervalS, index_available: deps.endpoints.indexUrl !== undefined, points: [], truth: [], failed_reads: 0 };
  const stopper = new AbortController();
  const stopped = new Promise<void>((r) => stopper.signal.addEventListener("abort", () => r(), { once: true }));
  const loop = (async () => {
    for (let k = 0; !stopper.signal.aborted; k++) {
      const due = startMs + k * deps.intervalS * 1000;
      const wait = due - deps.now();
      if (wait < -deps.intervalS * 1000) continue; // a slow read: skip the ticks it overran
      if (wait > 0) {
        let timer: ReturnType<typeof setTimeout> | undefined;
        await Promise.race([new Promise<void>((r) => (timer = setTimeout(r, wait))), stopped]);
        clearTimeout(timer);
      }
      if (stopper.signal.aborted) return;
      await sampleOnce(startMs, log, deps);
      deps.afterSample?.();
    }
  })();
  return {
    stop: async () => {
      stopper.abort();
      await loop;
      return log;
    },
  };
}

async function sampleOnce(startMs: number, log: AuditLog, deps: AuditLoopDeps): Promise<void> {
  const ends = deps.endpoints;
  const indexUrl = log.index_available ? `${ends.indexUrl}/v1/index` : undefined;
  try {
    let before: Residency | undefined;
    if (indexUrl) {
      try {
        before = await readResidency(indexUrl);
      } catch (err) {
        if (!/HTTP 404/.test((err as Error).message)) throw err;
        log.index_available = false;
        deps.logger.warn(`audit: ${indexUrl} answers 404: this router publishes no index; auditing the mockers' truth only (no precision / recall)`);
      }
    }
    const mockers = await mockerUrlsOf(ends, before);
    const t_s = (deps.now() - startMs) / 1000;
    const docs = await readTruths(mockers);
    const truth: Residency = { sources: docs.flatMap((d) => d?.sources ?? []) };
    const load: Record<string, number> = {};
    for (const s of truth.sources) if (s.requests !== undefined) load[`${s.worker_id}/${s.dp_rank}`] = s.requests;
    if (deps.keepSamples !== false) log.truth.push({ t_s, truth, ...(Object.keys(load).length > 0 ? { load } : {}) });
    if (!before || !indexUrl) return;
    let point: AuditPoint | undefined;
    for (let waited = 0, settle = INDEX_SETTLE_MS; waited < INDEX_SETTLE_MAX_MS && !(point && point.precision === 1 && point.recall === 1); waited += settle, settle *= 2) {
      await new Promise((r) => setTimeout(r, Math.min(settle, INDEX_SETTLE_MAX_MS - waited)));
      point = auditPoint({ t_s, truth, indexBefore: before, indexAfter: await readResidency(indexUrl) });
    }
    if (point === undefined) return;
    if (deps.keepSamples !== false) log.points.push(point);
    deps.onPoint?.(point);
  } catch (err) {
    log.failed_reads++;
    deps.logger.debug(`audit: read failed: ${(err as Error).message}`);
  }
}
