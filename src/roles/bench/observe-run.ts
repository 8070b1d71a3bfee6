// What bench watches during a run besides the requests: the fault schedule it applies and the
// audit it samples (both shared with up: roles/shared/stack/fault-runner.ts, roles/shared/stack/audit-loop.ts), started with
// the first measured request and stopped when the last one ends. Its result goes into the run's
// JSON: `faults`, `audit`, `recovery_s` and, from the audit's truth samples, `regret`.
import type { ScheduleEntry } from "../../config/fault-schedule.ts";
import type { BlockHasher } from "../../core/kv/block-hash.ts";
import type { WorkloadRequest } from "../../core/workload/workload.ts";
import type { Logger } from "../../lib/logger.ts";
import { startAudit, type AuditRun, type TruthSample } from "../shared/stack/audit-loop.ts";
import { runSchedule, type AppliedFault, type ProcessControl, type ScheduleRun } from "../shared/stack/fault-runner.ts";
import { recoveryTimes, worstPerWorker, type AuditPoint, type WorstAccuracy } from "../../core/audit/index-audit.ts";
import { mockerUrlsOf, type StackEndpoints } from "../shared/stack/stack-truth.ts";
import type { PrefillTiming } from "../../core/routing/regret.ts";
import type { TimedRecord } from "./drive-load.ts";
import { liveRegret, type RegretRequest, type RegretSummary } from "./regret.ts";

export interface ObserveOptions {
  schedule?: readonly ScheduleEntry[];
  /** Seconds between audit samples; undefined = no audit. */
  auditIntervalS?: number;
  endpoints: StackEndpoints;
  control?: ProcessControl;
  /** For regret: prompts are hashed at this block size (tokens). */
  blockSize: number;
  /** Regret needs the prompts' exact token ids (--prompt-format tokens). */
  promptsAreTokens: boolean;
  /** The stack's engine timing, to price regret in prefill time. */
  timing?: PrefillTiming;
}

export interface ObserveDeps {
  logger: Logger;
  now(): number;
  wallNow(): number;
  hasher: BlockHasher;
}

export interface AuditJson {
  interval_s: number;
  /** The tier compared (seq hashes of the device tier). */
  tier: "device";
  index_available: boolean;
  failed_reads: number;
  points: AuditPoint[];
  worst: Record<string, WorstAccuracy>;
}

export interface RecoveryJson {
  entry: number;
  target: string;
  kind: string;
  /** What recovery is counted from (the fault's end, or when it was applied), seconds from the start. */
  from_s: number;
  recovery_s: number | null;
}

export interface RunObservation {
  faults?: AppliedFault[];
  audit?: AuditJson;
  recovery_s?: RecoveryJson[];
  /** Null when it could not be computed (text prompts, no truth sample, no worker headers). */
  regret?: RegretSummary | null;
}

export interface RunObserver {
  /** The run's clock origin (the first measured request). */
  start(startMs: number): void;
  /** Stops both, withdraws the faults still active, and builds the observation. */
  finish(records: readonly TimedRecord[], workload: readonly WorkloadRequest[]): Promise<RunObservation>;
}

export function observeRun(opts: ObserveOptions, deps: ObserveDeps): RunObserver {
  let schedule: ScheduleRun | undefined;
  let audit: AuditRun | undefined;
  let startMs: number | undefined;
  return {
    start(t0) {
      startMs = t0;
      if (opts.schedule !== undefined) {
        schedule = runSchedule(opts.schedule, t0, { logger: deps.logger, now: deps.now, wallNow: deps.wallNow, mockers: () => mockerUrlsOf(opts.endpoints), control: opts.control });
      }
      if (opts.auditIntervalS !== undefined) audit = startAudit(t0, { logger: deps.logger, now: deps.now, endpoints: opts.endpoints, intervalS: opts.auditIntervalS });
    },
    async finish(records, workload) {
      const out: RunObservation = {};
      if (schedule) {
        await schedule.stop();
        await schedule.withdraw();
        out.faults = schedule.applied;
      }
      if (!audit || startMs === undefined) return out;
      const log = await audit.stop();
      out.audit = { interval_s: log.interval_s, tier: "device", index_available: log.index_available, failed_reads: log.failed_reads, points: log.points, worst: worstPerWorker(log.points) };
      if (out.faults) {
        const applied = out.faults.filter((f) => f.error === undefined);
        const times = log.index_available ? recoveryTimes(log.points, applied) : applied.map(() => null);
        out.recovery_s = applied.map((f, i) => ({ entry: f.entry, target: f.target, kind: f.kind, from_s: f.ends_at_s ?? f.applied_s, recovery_s: times[i] ?? null }));
      }
      out.regret = regretOf(records, workload, startMs, log.truth, opts, deps);
      return out;
    },
  };
}

/** Each request's prompt as full-block seq hashes, served by the (worker, rank) its headers name. */
export function regretRequests(records: readonly TimedRecord[], workload: readonly WorkloadRequest[], startMs: number, blockSize: number, hasher: BlockHasher): RegretRequest[] {
  const out: RegretRequest[] = [];
  for (const r of records) {
    if (r.worker === undefined || r.dpRank === undefined) continue;
    const req = workload[r.index]!;
    const tokens = new Uint32Array(req.inputLength);
    req.writeTokens(tokens);
    // The router's hashes: full blocks only (a partial last block is never cached).
    out.push({ start_s: (r.sentMs - startMs) / 1000, seq_hashes: Array.from(hasher.sequenceHashes(tokens, blockSize)), worker_id: r.worker, dp_rank: r.dpRank, prompt_tokens: req.inputLength });
  }
  return out;
}

function regretOf(records: readonly TimedRecord[], workload: readonly WorkloadRequest[], startMs: number, truth: TruthSample[], opts: ObserveOptions, deps: ObserveDeps): RegretSummary | null {
  if (!opts.promptsAreTokens) {
    deps.logger.warn("regret: skipped: with --prompt-format text the server tokenizes the prompts, so their block hashes are not known here");
    return null;
  }
  if (truth.length === 0) return null;
  const requests = regretRequests(records, workload, startMs, opts.blockSize, deps.hasher);
  if (requests.length === 0) {
    deps.logger.warn("regret: skipped: no response named its worker and rank (x-kvcr-worker / x-kvcr-dp-rank headers)");
    return null;
  }
  return liveRegret(requests, truth, opts.blockSize, opts.timing);
}
