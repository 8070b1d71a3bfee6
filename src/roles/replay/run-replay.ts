// `kvcr-mock replay` as a function: load the workload (Mooncake trace file or synthetic), run
// the core simulator on a virtual clock, print the report table and write its JSON. File
// reading, timing and printing live here; everything simulated lives in src/core.
import type { ReplayReport } from "../../core/replay/report.ts";
import type { ReportDeps } from "../shared/measure/report-deps.ts";
import { ConfigError, KvcrError } from "../../lib/errors.ts";
import { isSessionWorkload } from "../../core/replay/session-run.ts";
import { simulateStack, type SimulatedStack } from "../shared/measure/simulated-stack.ts";
import { arrivalSpecOf, describeArrival, describeSessionArrival, loadWorkload, type ArrivalOptions, type WorkloadOptions } from "../shared/measure/workload.ts";
import type { ArrivalSpec } from "../../core/workload/arrivals.ts";
import type { WorkloadRequest } from "../../core/workload/workload.ts";
import { formatLayouts } from "./format-layouts.ts";
import { formatReport } from "./format-report.ts";
import { runLayouts, type LayoutOptions } from "./layouts.ts";

export interface ReplayOptions extends WorkloadOptions, ArrivalOptions, SimulatedStack {
  /** Judge every decision's regret (default true). */
  regret?: boolean;
  /** Write the JSON report here ("-" = stdout instead of the table). */
  outputJson?: string;
  /** A prefill and decode layout (layouts.ts): replaces the aggregated run. */
  layout?: LayoutOptions;
}

export interface ReplayDeps extends ReportDeps {
  /** Progress bar target; omitted (or not a TTY) = no bar. */
  progress?: { write(text: string): unknown; isTTY?: boolean };
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
  const arrival = arrivalSpecOf(opts);
  if (opts.layout) {
    // The prefill and decode simulator sends each request at its own arrival: turns that wait for their predecessor would be sent early.
    if (isSessionWorkload(workload)) throw new ConfigError(["--prefill-workers/--decode-workers and --compare-layouts replay independent requests, not sessions: drop the session workload or the layout flags"]);
    return replayLayouts(workload, arrival, opts, opts.layout, deps);
  }
  deps.logger.info(`replaying ${workload.length} requests on ${opts.numWorkers} worker(s) × ${opts.dataParallelSize ?? 1} rank(s), router ${opts.routerMode}, arrivals ${describeSessionArrival(workload, arrival, opts.maxSessions) ?? describeArrival(arrival, opts.trace !== undefined)}`);
  const bar = deps.progress?.isTTY ? deps.progress : undefined;
  const onProgress = bar ? (done: number, total: number) => void bar.write(`\r${progressLine(done, total)}`) : undefined;
  const report = simulateStack(workload, opts, { arrival, seed: opts.seed, regret: opts.regret, maxSessions: opts.maxSessions, startedMs: started, onProgress }, { ...deps, warn: (m) => deps.logger.warn(m) });
  if (bar) bar.write("\n");
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

/** The layout run: its table(s) and verdict, its JSON; returns the disaggregated report (the exit status reads it). */
function replayLayouts(workload: WorkloadRequest[], arrival: ArrivalSpec, opts: ReplayOptions, layout: LayoutOptions, deps: ReplayDeps): ReplayReport {
  deps.logger.info(`replaying ${workload.length} requests on ${layout.prefillWorkers} prefill + ${layout.decodeWorkers} decode worker(s)${layout.compare ? ` against ${layout.prefillWorkers + layout.decodeWorkers} aggregated (router ${opts.routerMode})` : ""}, arrivals ${describeArrival(arrival, opts.trace !== undefined)}`);
  const outcome = runLayouts(workload, opts, layout, { arrival, seed: opts.seed }, deps);
  const json = JSON.stringify(layout.compare ? outcome : outcome.reports.disagg, null, 2) + "\n";
  if (opts.outputJson === "-") deps.stdout.write(json);
  else {
    deps.stdout.write(formatLayouts(outcome));
    if (opts.outputJson !== undefined) deps.writeFile(opts.outputJson, json);
  }
  const reports = Object.values(outcome.reports);
  return reports.find((r) => r.completed === 0) ?? reports[0]!;
}

/**
 * Process exit status of a replay: 1 when no request completed, else 0. vLLM's benchmark_serving
 * only warns "All requests failed" and exits 0; a replay that measured nothing is a failed run
 * for any script that reads its figures, while partial failures are results (reported, exit 0).
 */
export function replayExitCode(report: ReplayReport): 0 | 1 {
  return report.completed === 0 ? 1 : 0;
}

function progressLine(done: number, total: number): string {
  const width = 30;
  const filled = Math.round((done / total) * width);
  return `[${"#".repeat(filled)}${" ".repeat(width - filled)}] ${done}/${total} requests`;
}
