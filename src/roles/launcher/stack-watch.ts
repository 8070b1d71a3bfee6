// `up --faults FILE` and `up --audit`: once the stack is ready, apply the schedule to it (faults to
// its mockers, kill / restart through its supervisor) and log the index audit's stack-wide worst
// precision / recall once per interval. Both stop with the stack.
import type { ScheduleEntry } from "../../config/fault-schedule.ts";
import type { Logger } from "../../lib/logger.ts";
import { startAudit, type AuditRun } from "../shared/stack/audit-loop.ts";
import { runSchedule, type ScheduleRun } from "../shared/stack/fault-runner.ts";
import { foldRecoveries, foldWorst, type WorstAccuracy } from "../../core/audit/index-audit.ts";
import { mockerUrlsOf, type StackEndpoints } from "../shared/stack/stack-truth.ts";
import type { StackHandle } from "./start.ts";

export interface WatchOptions {
  schedule?: readonly ScheduleEntry[];
  /** Seconds between audit samples; undefined = no audit. */
  auditIntervalS?: number;
}

export interface StackWatch {
  stop(): Promise<void>;
}

export function watchStack(stack: Pick<StackHandle, "frontendUrl" | "processes" | "control">, opts: WatchOptions, logger: Logger): StackWatch {
  const startMs = performance.now();
  const local = stack.processes.filter((p) => p.role === "mocker").map((p) => p.url);
  // No mocker on this host (`--roles frontend`): they are found through the frontend's /v1/index.
  const ends: StackEndpoints = { ...(stack.frontendUrl ? { indexUrl: stack.frontendUrl } : {}), ...(local.length > 0 ? { mockerUrls: local } : {}) };
  let schedule: ScheduleRun | undefined;
  let audit: AuditRun | undefined;
  if (opts.schedule && opts.schedule.length > 0) {
    logger.info(`fault schedule: ${opts.schedule.length} entr${opts.schedule.length === 1 ? "y" : "ies"}, the first at ${opts.schedule[0]!.atS} s from now`);
    schedule = runSchedule(opts.schedule, startMs, { logger, now: () => performance.now(), wallNow: Date.now, mockers: () => mockerUrlsOf(ends), control: stack.control });
  }
  // Summaries are folded point by point, so nothing grows with the run's length.
  const worst: Record<string, WorstAccuracy> = {};
  const applied = () => schedule?.applied.filter((f) => f.error === undefined) ?? [];
  const recovered: (number | null)[] = [];
  let points = 0;
  if (opts.auditIntervalS !== undefined && stack.frontendUrl) {
    audit = startAudit(startMs, {
      logger,
      now: () => performance.now(),
      endpoints: ends,
      intervalS: opts.auditIntervalS,
      keepSamples: false,
      // A sample parses megabytes of JSON (the index twice, every mocker's truth) that are garbage a
      // moment later; left to itself the collector lets RSS climb tens of MiB before it runs. Asking
      // for a collection after each sample keeps RSS flat (docs/PERFORMANCE.md, Reliability).
      afterSample: () => Bun.gc(true),
      onPoint: (p) => {
        points++;
        foldWorst(worst, p);
        foldRecoveries(recovered, p, applied());
        logger.info(`audit ${p.t_s.toFixed(1)} s: worst precision ${p.precision.toFixed(4)}, worst recall ${p.recall.toFixed(4)} over ${Object.keys(p.workers).length} worker(s)`);
      },
    });
  }
  return {
    stop: async () => {
      await schedule?.stop();
      if (!audit) return;
      await audit.stop();
      if (points === 0) return;
      // What bench writes into its result, said once as the stack stops: each worker's worst, each fault's recovery.
      for (const [w, a] of Object.entries(worst)) {
        logger.info(`audit summary: worker ${w}: worst precision ${a.precision.toFixed(4)} (at ${a.precision_t_s.toFixed(1)} s), worst recall ${a.recall.toFixed(4)} (at ${a.recall_t_s.toFixed(1)} s)`);
      }
      applied().forEach((f, i) => {
        const r = recovered[i] ?? null;
        logger.info(`audit summary: entry ${f.entry} (${f.kind} on ${f.target}): ${r === null ? "not recovered (precision and recall never back to 0.99)" : `recovered ${r.toFixed(2)} s after it ended`}`);
      });
    },
  };
}
