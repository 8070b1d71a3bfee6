// The workload every load-driving role (replay, bench) runs: a Mooncake trace file or the seeded
// synthetic shared-prefix generator, plus the arrival spec its flags choose. Shared here
// so the two roles read traces, report bad lines and pick arrivals identically.
import type { ArrivalSpec } from "../../../core/workload/arrivals.ts";
import { tracePath } from "./builtin-traces.ts";
import { parseMooncakeTrace } from "../../../core/workload/mooncake-trace.ts";
import { randomDataset, randomDatasetProblems, type RandomDatasetOptions } from "../../../core/workload/random-dataset.ts";
import { sharedPrefixProblems, sharedPrefixWorkload, type SharedPrefixOptions } from "../../../core/workload/synthetic.ts";
import type { WorkloadRequest } from "../../../core/workload/workload.ts";
import type { ConfigOf } from "../../../config/options.ts";
import type { workloadOptions } from "../../../config/replay.ts";
import { ConfigError, KvcrError } from "../../../lib/errors.ts";
import type { Logger } from "../../../lib/logger.ts";

export const SHOWN_BAD_LINES = 20;
export const DEFAULT_SYNTHETIC_REQUESTS = 100;

export interface WorkloadOptions {
  /** Mooncake JSONL trace; without it the synthetic shared-prefix workload runs. */
  trace?: string;
  traceBlockSize: number;
  skipBadLines: boolean;
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
}

type WorkloadConfig = ConfigOf<typeof workloadOptions>;

/** The workload flags (shared by replay and bench) as WorkloadOptions. */
export function workloadOptionsFrom(c: WorkloadConfig): WorkloadOptions {
  return {
    trace: c.trace,
    traceBlockSize: c.traceBlockSize,
    skipBadLines: c.skipBadLines,
    synthetic: { numPrefixes: c.numPrefixes, prefixTokens: c.prefixTokens, suffixTokens: c.suffixTokens, outputTokens: c.outputTokens },
    requests: c.requests,
    seed: c.seed,
  };
}

/** The arrival flags; --trace-speedup (the alias docs/cli.md lists) wins over --arrival-speedup-ratio. */
export function arrivalOptionsFrom(c: WorkloadConfig): ArrivalOptions {
  return { concurrency: c.concurrency, requestRate: c.requestRate, arrivalSpeedupRatio: c.traceSpeedup ?? c.arrivalSpeedupRatio };
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
  const parsed = parseMooncakeTrace(text, opts.traceBlockSize);
  if (parsed.errors.length > 0) {
    const shown = parsed.errors.slice(0, SHOWN_BAD_LINES).map((e) => `${opts.trace}:${e.line}: ${e.message}`);
    const more = parsed.errors.length > SHOWN_BAD_LINES ? [`… and ${parsed.errors.length - SHOWN_BAD_LINES} more bad lines`] : [];
    if (!opts.skipBadLines) {
      throw new KvcrError(
        "TRACE_INVALID",
        [`${parsed.errors.length} bad line(s) in ${opts.trace}; ${nothingDone} (pass --skip-bad-lines to use the good ones):`, ...shown, ...more].join("\n  "),
      );
    }
    deps.logger.warn([`skipping ${parsed.errors.length} bad line(s) of ${opts.trace}:`, ...shown, ...more].join("\n  "));
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

export function describeArrival(a: ArrivalSpec, fromTrace: boolean): string {
  if (a.kind === "concurrency") return `closed loop, concurrency ${a.concurrency}`;
  if (a.kind === "rate" && a.requestsPerSecond === Infinity) return "all at once (request rate inf)";
  if (a.kind === "rate") return a.burstiness !== undefined && a.burstiness !== 1 ? `gamma (burstiness ${a.burstiness}), ${a.requestsPerSecond} req/s` : `Poisson, ${a.requestsPerSecond} req/s`;
  // Synthetic requests carry timestamp 0: without --request-rate or --concurrency they all arrive at once.
  if (!fromTrace) return "all at once (synthetic workload; --request-rate or --concurrency to pace it)";
  return a.speedupRatio === 1 ? "trace timestamps" : `trace timestamps ÷ ${a.speedupRatio}`;
}
