// The workload every load-driving role (replay, bench) runs: a Mooncake trace file or the seeded
// synthetic shared-prefix generator, plus the arrival spec its flags choose. Shared here
// so the two roles read traces, report bad lines and pick arrivals identically.
import type { ArrivalSpec } from "../../../core/workload/arrivals.ts";
import { tracePath } from "./builtin-traces.ts";
import { parseTrace } from "../../../core/workload/sessions/parse-trace.ts";
import { agenticProblems, agenticWorkload, type AgenticOptions } from "../../../core/workload/sessions/agentic.ts";
import type { TraceFormat } from "../../../protocol/trace-formats.ts";
import { randomDataset, randomDatasetProblems, type RandomDatasetOptions } from "../../../core/workload/random-dataset.ts";
import { sharedPrefixProblems, sharedPrefixWorkload, type SharedPrefixOptions } from "../../../core/workload/synthetic.ts";
import type { WorkloadRequest } from "../../../core/workload/workload.ts";
import type { ConfigOf } from "../../../config/options.ts";
import type { workloadOptions } from "../../../config/replay.ts";
import { ConfigError, KvcrError } from "../../../lib/errors.ts";
import type { Logger } from "../../../lib/logger.ts";

export const SHOWN_BAD_LINES = 20;
export const DEFAULT_SYNTHETIC_REQUESTS = 100;
/** bench --dataset-name agentic without --sessions. */
export const DEFAULT_AGENTIC_SESSIONS = 16;

export interface WorkloadOptions {
  /** Mooncake JSONL trace; without it the synthetic shared-prefix workload runs. */
  trace?: string;
  traceBlockSize: number;
  /** The trace's format (default: told from its first row). */
  traceFormat?: TraceFormat;
  skipBadLines: boolean;
  /** The synthetic agentic sessions instead of the shared-prefix requests (no trace). */
  agentic?: Omit<AgenticOptions, "seed">;
  synthetic: Omit<SharedPrefixOptions, "requests" | "seed">;
  /** vLLM's random dataset instead of the shared-prefix one (bench --dataset-name random). */
  random?: Omit<RandomDatasetOptions, "requests" | "seed">;
  /** Synthetic: number of requests. Trace: only its first N requests. */
  requests?: number;
  seed: number;
}

/** How requests arrive (arrivalSpecOf picks one). */
export interface ArrivalOptions {
  /** Closed loop with N in flight (wins over request rate and timestamps). */
  concurrency?: number;
  /** Poisson arrivals at this many requests per second (Infinity: all at once). */
  requestRate?: number;
  /** Gamma shape of the gaps at requestRate (1 = Poisson). */
  burstiness?: number;
  /** Rescale the gaps so the last arrival is at n / rate (vLLM's bench does). */
  scaleToRate?: boolean;
  /** vLLM's --max-concurrency: alone, a closed loop of N. */
  maxConcurrency?: number;
  /** Trace timestamps are divided by this. */
  arrivalSpeedupRatio: number;
  /** Session workloads: at most this many sessions open at once. */
  maxSessions?: number;
}

type WorkloadConfig = ConfigOf<typeof workloadOptions>;

/** The workload flags (shared by replay and bench) as WorkloadOptions. */
export function workloadOptionsFrom(c: WorkloadConfig): WorkloadOptions {
  return {
    trace: c.trace,
    traceBlockSize: c.traceBlockSize,
    traceFormat: c.traceFormat,
    skipBadLines: c.skipBadLines,
    ...(c.sessions !== undefined ? { agentic: { sessions: c.sessions, turns: c.turns, toolTokens: c.toolTokens, thinkTimeMs: c.thinkTimeMs, numPrefixes: c.numPrefixes, prefixTokens: c.prefixTokens, suffixTokens: c.suffixTokens, outputTokens: c.outputTokens } } : {}),
    synthetic: { numPrefixes: c.numPrefixes, prefixTokens: c.prefixTokens, suffixTokens: c.suffixTokens, outputTokens: c.outputTokens },
    requests: c.requests,
    seed: c.seed,
  };
}

/** The arrival flags; --trace-speedup (the alias docs/cli.md lists) wins over --arrival-speedup-ratio. */
export function arrivalOptionsFrom(c: WorkloadConfig): ArrivalOptions {
  return { concurrency: c.concurrency, requestRate: c.requestRate, arrivalSpeedupRatio: c.traceSpeedup ?? c.arrivalSpeedupRatio, maxSessions: c.maxSessions };
}

export interface WorkloadDeps {
  readFile(path: string): string;
  logger: Logger;
}

/** What a role does with the workload, for messages ("nothing was simulated"). */
export function loadWorkload(opts: WorkloadOptions, deps: WorkloadDeps, nothingDone = "nothing was simulated"): WorkloadRequest[] {
  if (opts.trace === undefined && opts.random) {
    const problems = randomDatasetProblems(opts.random);
    if (problems.length > 0) throw new ConfigError(problems);
    return randomDataset({ ...opts.random, requests: opts.requests ?? DEFAULT_SYNTHETIC_REQUESTS, seed: opts.seed });
  }
  if (opts.trace === undefined && opts.agentic) {
    const agentic = { ...opts.agentic, seed: opts.seed };
    const problems = agenticProblems(agentic);
    if (problems.length > 0) throw new ConfigError(problems);
    const turns = agenticWorkload(agentic);
    return opts.requests !== undefined ? turns.slice(0, opts.requests) : turns;
  }
  if (opts.trace === undefined) {
    const synthetic = { ...opts.synthetic, requests: opts.requests ?? DEFAULT_SYNTHETIC_REQUESTS, seed: opts.seed };
    const problems = sharedPrefixProblems(synthetic);
    if (problems.length > 0) throw new ConfigError(problems);
    return sharedPrefixWorkload(synthetic);
  }
  let text: string;
  try {
    text = deps.readFile(tracePath(opts.trace));
  } catch (err) {
    throw new KvcrError("TRACE_UNREADABLE", `cannot read --trace ${opts.trace}: ${(err as Error).message}`);
  }
  const parsed = parseTrace(text, { format: opts.traceFormat ?? "auto", traceBlockSize: opts.traceBlockSize, defaultOutputTokens: opts.synthetic.outputTokens });
  if (parsed.errors.length > 0) {
    const shown = parsed.errors.slice(0, SHOWN_BAD_LINES).map((e) => `${opts.trace}:${e.line}: ${e.message}`);
    const more = parsed.errors.length > SHOWN_BAD_LINES ? [`… and ${parsed.errors.length - SHOWN_BAD_LINES} more bad lines`] : [];

    if (!opts.skipBadLines) {
      throw new KvcrError(
        "TRACE_INVALID",
        [`${parsed.errors.length} bad line(s) in ${opts.trace}; ${nothingDone} (pass --skip-bad-lines to use the good ones):`, ...shown, ...more].join("\n  "),
      );
    }
    // A session with a bad line goes whole: its later turns would wait on a turn that is not there.
    const dropped = parsed.dropped && parsed.dropped.sessions > 0 ? [`dropping ${parsed.dropped.sessions} whole session(s) with a bad line, and the ${parsed.dropped.turns} good turn(s) in them`] : [];
    deps.logger.warn([`skipping ${parsed.errors.length} bad line(s) of ${opts.trace}:`, ...shown, ...more, ...dropped].join("\n  "));
  }
  const requests = opts.requests !== undefined ? parsed.requests.slice(0, opts.requests) : parsed.requests;
  if (requests.length === 0) throw new KvcrError("TRACE_EMPTY", `--trace ${opts.trace} holds no request to run`);
  return requests;
}

/**
 * --concurrency wins, then a finite --request-rate, then --max-concurrency alone (a closed loop,
 * as vLLM's semaphore over requests all due at 0), then --request-rate inf, else trace timestamps
 * (synthetic: all at once).
 */
export function arrivalSpecOf(o: ArrivalOptions): ArrivalSpec {
  if (o.concurrency !== undefined) return { kind: "concurrency", concurrency: o.concurrency };
  if (o.requestRate !== undefined && o.requestRate !== Infinity) {
    return { kind: "rate", requestsPerSecond: o.requestRate, ...(o.burstiness !== undefined && o.burstiness !== 1 ? { burstiness: o.burstiness } : {}), ...(o.scaleToRate ? { scaleToRate: true } : {}) };
  }
  if (o.maxConcurrency !== undefined) return { kind: "concurrency", concurrency: o.maxConcurrency };
  if (o.requestRate !== undefined) return { kind: "rate", requestsPerSecond: Infinity };
  return { kind: "trace", speedupRatio: o.arrivalSpeedupRatio };
}

/** A session workload's arrivals in words; undefined for independent requests. */
export function describeSessionArrival(workload: readonly WorkloadRequest[], a: ArrivalSpec, maxSessions: number | undefined): string | undefined {
  if (workload[0]?.session === undefined) return undefined;
  const sessions = new Set(workload.map((r) => r.session!.session)).size;
  const cap = Math.min(a.kind === "concurrency" ? a.concurrency : Infinity, maxSessions ?? Infinity);
  const first = a.kind === "concurrency" ? "all at 0" : describeArrival(a, true);
  return `${sessions} sessions, each turn sent its delay after the previous one finished; first turns ${first}${cap !== Infinity ? `, at most ${cap} sessions open` : ""}`;
}

export function describeArrival(a: ArrivalSpec, fromTrace: boolean): string {
  if (a.kind === "concurrency") return `closed loop, concurrency ${a.concurrency}`;
  if (a.kind === "rate" && a.requestsPerSecond === Infinity) return "all at once (request rate inf)";
  if (a.kind === "rate") return a.burstiness !== undefined && a.burstiness !== 1 ? `gamma (burstiness ${a.burstiness}), ${a.requestsPerSecond} req/s` : `Poisson, ${a.requestsPerSecond} req/s`;
  // Synthetic requests carry timestamp 0: without --request-rate or --concurrency they all arrive at once.
  if (!fromTrace) return "all at once (synthetic workload; --request-rate or --concurrency to pace it)";
  return a.speedupRatio === 1 ? "trace timestamps" : `trace timestamps ÷ ${a.speedupRatio}`;
}
