// `kvcr-mock replay` as a function: load the workload (Mooncake trace file or synthetic), run
// the core simulator on a virtual clock, print the report table and write its JSON. File
// reading, timing and printing live here; everything simulated lives in src/core.
import type { EngineConfig } from "../../core/engine/engine-config.ts";
import { buildReport, type ReplayReport } from "../../core/replay/report.ts";
import { simulate } from "../../core/replay/simulator.ts";
import type { RouterMode } from "../../core/routing/router.ts";
import type { ArrivalSpec } from "../../core/workload/arrivals.ts";
import { parseMooncakeTrace } from "../../core/workload/mooncake-trace.ts";
import { sharedPrefixProblems, sharedPrefixWorkload, type SharedPrefixOptions } from "../../core/workload/synthetic.ts";
import type { WorkloadRequest } from "../../core/workload/workload.ts";
import type { BlockHasher } from "../../core/kv/block-hash.ts";
import { ConfigError, KvcrError } from "../../lib/errors.ts";
import type { Logger } from "../../lib/logger.ts";
import { formatReport } from "./format-report.ts";

export const SHOWN_BAD_LINES = 20;

export interface ReplayOptions {
  /** Mooncake JSONL trace; without it the synthetic shared-prefix workload runs. */
  trace?: string;
  traceBlockSize: number;
  skipBadLines: boolean;
  synthetic: Omit<SharedPrefixOptions, "requests" | "seed">;
  /** Synthetic: number of requests. Trace: replay only its first N requests. */
  requests?: number;
  /** Closed loop with N in flight (wins over request rate and timestamps). */
  concurrency?: number;
  /** Poisson arrivals at this many requests per second. */
  requestRate?: number;
  /** Trace timestamps are divided by this. */
  arrivalSpeedupRatio: number;
  numWorkers: number;
  dataParallelSize?: number;
  routerMode: RouterMode;
  prefillLoadScale: number;
  hostWeight?: number;
  diskWeight?: number;
  routerTemperature: number;
  busyThreshold?: number;
  engine: Partial<EngineConfig>;
  seed: number;
  /** Write the JSON report here ("-" = stdout instead of the table). */
  outputJson?: string;
}

export interface ReplayDeps {
  hasher: BlockHasher;
  readFile(path: string): string;
  writeFile(path: string, text: string): void;
  /** Throws when `path` cannot be written; called before simulating (src/lib/probe-writable.ts). */
  checkWritable(path: string): void;
  stdout: { write(text: string): unknown };
  /** Progress bar target; omitted (or not a TTY) = no bar. */
  progress?: { write(text: string): unknown; isTTY?: boolean };
  logger: Logger;
  /** Wall clock in ms (performance.now). */
  now(): number;
}

/**
 * Runs the replay and prints its report. Failed requests are reported, as vLLM's benchmark
 * tools do; a run in which no request completed is also logged as an error (see replayExitCode).
 */
export async function runReplay(opts: ReplayOptions, deps: ReplayDeps): Promise<ReplayReport> {
  const started = deps.now();
  // A bad output path found after minutes of simulation would lose the run: check it first.
  if (opts.outputJson !== undefined && opts.outputJson !== "-") {
    try {
      deps.checkWritable(opts.outputJson);
    } catch (err) {
      throw new KvcrError("OUTPUT_UNWRITABLE", `cannot write --output-json ${opts.outputJson}: ${(err as Error).message}; nothing was simulated`);
    }
  }
  const workload = loadWorkload(opts, deps);
  const arrival: ArrivalSpec =
    opts.concurrency !== undefined
      ? { kind: "concurrency", concurrency: opts.concurrency }
      : opts.requestRate !== undefined
        ? { kind: "rate", requestsPerSecond: opts.requestRate }
        : { kind: "trace", speedupRatio: opts.arrivalSpeedupRatio };
  deps.logger.info(`replaying ${workload.length} requests on ${opts.numWorkers} worker(s) × ${opts.dataParallelSize ?? 1} rank(s), router ${opts.routerMode}, arrivals ${describeArrival(arrival, opts.trace !== undefined)}`);
  const bar = deps.progress?.isTTY ? deps.progress : undefined;
  const sim = simulate(
    workload,
    {
      engine: opts.engine,
      numWorkers: opts.numWorkers,
      dataParallelSize: opts.dataParallelSize,
      routerMode: opts.routerMode,
      prefillLoadScale: opts.prefillLoadScale,
      hostWeight: opts.hostWeight,
      diskWeight: opts.diskWeight,
      routerTemperature: opts.routerTemperature,
      busyThreshold: opts.busyThreshold,
      arrival,
      seed: opts.seed,
      onProgress: bar ? (done, total) => bar.write(`\r${progressLine(done, total)}`) : undefined,
    },
    { hasher: deps.hasher },
  );
  if (bar) bar.write("\n");
  const report = buildReport(sim, { routerMode: opts.routerMode, wallTimeMs: deps.now() - started });
  const json = JSON.stringify(report, null, 2) + "\n";
  if (opts.outputJson === "-") deps.stdout.write(json);
  else {
    deps.stdout.write(formatReport(report));
    if (opts.outputJson !== undefined) {
      try {
        deps.writeFile(opts.outputJson, json);
      } catch (err) {
        throw new KvcrError("OUTPUT_FAILED", `cannot write --output-json ${opts.outputJson}: ${(err as Error).message}`);
      }
    }
  }
  const first = report.errors[0];
  const why = first ? ` (first: request ${first.request}: ${first.error})` : "";
  if (report.completed === 0) deps.logger.error(`no request completed: all ${report.failed} failed${why}; exit status 1`);
  else if (report.failed > 0) deps.logger.warn(`${report.failed} of ${report.failed + report.completed} requests failed${why}; the report covers the ${report.completed} that completed`);
  return report;
}

/**
 * Process exit status of a replay: 1 when no request completed, else 0. vLLM's benchmark_serving
 * only warns "All requests failed" and exits 0; a replay that measured nothing is a failed run
 * for any script that reads its figures, while partial failures are results (reported, exit 0).
 */
export function replayExitCode(report: ReplayReport): 0 | 1 {
  return report.completed === 0 ? 1 : 0;
}

function loadWorkload(opts: ReplayOptions, deps: ReplayDeps): WorkloadRequest[] {
  if (opts.trace === undefined) {
    const synthetic = { ...opts.synthetic, requests: opts.requests ?? 100, seed: opts.seed };
    const problems = sharedPrefixProblems(synthetic);
    if (problems.length > 0) throw new ConfigError(problems);
    return sharedPrefixWorkload(synthetic);
  }
  let text: string;
  try {
    text = deps.readFile(opts.trace);
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
        [`${parsed.errors.length} bad line(s) in ${opts.trace}; nothing was simulated (pass --skip-bad-lines to replay the good ones):`, ...shown, ...more].join("\n  "),
      );
    }
    deps.logger.warn([`skipping ${parsed.errors.length} bad line(s) of ${opts.trace}:`, ...shown, ...more].join("\n  "));
  }
  const requests = opts.requests !== undefined ? parsed.requests.slice(0, opts.requests) : parsed.requests;
  if (requests.length === 0) throw new KvcrError("TRACE_EMPTY", `--trace ${opts.trace} holds no request to replay`);
  return requests;
}

function describeArrival(a: ArrivalSpec, fromTrace: boolean): string {
  if (a.kind === "concurrency") return `closed loop, concurrency ${a.concurrency}`;
  if (a.kind === "rate") return `Poisson, ${a.requestsPerSecond} req/s`;
  // Synthetic requests carry timestamp 0: without --request-rate or --concurrency they all arrive at once.
  if (!fromTrace) return "all at once (synthetic workload; --request-rate or --concurrency to pace it)";
  return a.speedupRatio === 1 ? "trace timestamps" : `trace timestamps ÷ ${a.speedupRatio}`;
}

function progressLine(done: number, total: number): string {
  const width = 30;
  const filled = Math.round((done / total) * width);
  return `[${"#".repeat(filled)}${" ".repeat(width - filled)}] ${done}/${total} requests`;
}
