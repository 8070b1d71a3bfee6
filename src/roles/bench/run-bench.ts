// `kvcr-mock bench` as a function: load the workload (shared with replay), drive each run (one
// URL; or one stack per router mode; or one concurrency per sweep point; each --rounds times,
// rounds outermost so drift in the machine spreads over every side), then — for a comparison — the
// verdict first, the result table(s), the JSON and the HTML report; with --with-replay replay's
// prediction of the same run beside the measurement. One run is measure-run.ts; --compare reads
// two earlier results instead (compare-results.ts).
import type { GoodputSlo } from "../../config/bench.ts";
import type { ScheduleEntry } from "../../config/fault-schedule.ts";
import type { BlockHasher } from "../../core/kv/block-hash.ts";
import type { ReplayReport } from "../../core/replay/report.ts";
import type { PrefillTiming } from "../../core/routing/regret.ts";
import { KvcrError } from "../../lib/errors.ts";
import type { Logger } from "../../lib/logger.ts";
import type { ProcessControl } from "../fault-runner.ts";
import { simulateStack, type SimulatedStack } from "../simulated-stack.ts";
import { formatPrediction, formatResult, formatSideBySide } from "./format-result.ts";
import { renderHtml, type ReportRun } from "./html-report.ts";
import { reportHeader } from "./report-header.ts";
import { resultJson } from "./result-json.ts";
import { saveResult } from "./save-result.ts";
import { compareResults } from "./compare-results.ts";
import type { ArrivalSpec } from "../../core/workload/arrivals.ts";
import type { Verdict } from "../../core/stats/verdict.ts";
import { arrivalSpecOf, loadWorkload, type ArrivalOptions, type WorkloadOptions } from "../workload.ts";
import type { LoadResult } from "./drive-load.ts";
import type { ClientFigures } from "./client-resolution.ts";
import { formatVerdict, verdictHtml, verdictNotes } from "./format-verdict.ts";
import { measureRun } from "./measure-run.ts";
import type { BenchResult, Metric, RunMeta } from "./metrics.ts";
import type { RunObservation } from "./observe-run.ts";
import { poolRounds, sidesOf } from "./pool-rounds.ts";
import { verdictOfSides } from "./verdict-of-runs.ts";
import { formatObserved } from "./format-observed.ts";
import { predictionFigures } from "./with-replay.ts";

/** Synthetic requests generated for a --duration run without --requests (sending stops at the deadline). */
export const DURATION_SYNTHETIC_REQUESTS = 100_000;

export interface BenchOptions extends ArrivalOptions {
  /**
   * One target, or one per compared router mode: a running server (url), or a fresh stack per
   * run started through deps.startStack with that router mode (fresh).
   */
  targets: BenchTarget[];
  model?: string;
  endpoint: string;
  promptFormat: "tokens" | "text";
  stream: boolean;
  ignoreEos: boolean;
  apiKey?: string;
  workload: WorkloadOptions;
  /** Concurrency points; each target runs once per point. */
  sweepConcurrency?: number[];
  /**
   * Runs per target and point (each on a fresh stack where the target is one); round k draws its
   * workload with seed + k − 1, the same for every side. Default 1.
   */
  rounds?: number;
  warmupRequests: number;
  durationS?: number;
  percentiles: number[];
  requestTimeoutS: number;
  workerHeader: string;
  outputJson?: string;
  report?: string;
  withReplay?: SimulatedStack;
  /** --faults: applied during each run (from its first measured request). */
  schedule?: ScheduleEntry[];
  /** Seconds between audit samples; undefined = no audit. */
  auditIntervalS?: number;
  /** --mocker-urls: the mockers of the stack under test (default: through the frontend's GET /v1/index). */
  mockerUrls?: string[];
  /** The stack's KV block size (tokens), for regret's prompt hashes (default 64, the engine's). */
  blockSize?: number;
  /** The stack's engine timing (engine flags), to price regret in prefill time. */
  prefillTiming?: PrefillTiming;
  /** --compare A.json,B.json: print two results side by side and run nothing. */
  compare?: [string, string];
  /** With a request rate: at most this many in flight (vLLM's --max-concurrency beside --request-rate). */
  maxInFlight?: number;
  /** vLLM's --max-concurrency as given (the result's max_concurrency and file name). */
  maxConcurrency?: number;
  /** The model name sent in requests when it differs from `model` (vLLM's --served-model-name). */
  servedModelName?: string;
  /** The result's backend (default: openai, or openai-chat for a chat endpoint). */
  backend?: string;
  /** The result's label and the --save-result name's first part. */
  label?: string;
  tokenizerId?: string;
  /** Extra request headers (--header). */
  headers?: Record<string, string>;
  /** --request-id-prefix: each request carries `x-request-id: <prefix><n>`, as vllm bench serve sends it. */
  requestIdPrefix?: string;
  /** Merged into every request body: sampling parameters and --extra-body. */
  bodyExtra?: Record<string, unknown>;
  goodput?: GoodputSlo;
  percentileMetrics?: Metric[];
  metadata?: Record<string, string>;
  saveDetailed?: boolean;
  /** Seconds to wait for a first test request to complete before measuring (0: none). */
  readyCheckTimeoutS?: number;
  /** --save-result / --append-result: where (vLLM's default name unless `filename`). */
  saveResult?: { dir?: string; filename?: string; append: boolean };
}

export type BenchTarget = { label?: string; url: string } | { label?: string; fresh: { routerMode: string } };

/** A stack started for one run (the launcher's code, as `up` runs it). */
export interface StartedStack {
  url: string;
  /** Its mockers' base URLs, in stack order. */
  mockerUrls?: string[];
  /** Kill / restart of its children (fault schedules). */
  control?: ProcessControl;
  close(): Promise<void>;
}

export interface BenchDeps {
  /** Starts a fresh stack with this router mode (wired to the launcher by the CLI). */
  startStack?(routerMode: string): Promise<StartedStack>;
  hasher: BlockHasher;
  readFile(path: string): string;
  writeFile(path: string, text: string): void;
  checkWritable(path: string): void;
  stdout: { write(text: string): unknown };
  logger: Logger;
  now(): number;
  sleep(ms: number): Promise<void>;
  /** Progress display for a run of `total` requests (a bar on a TTY; 0 = not known in advance); undefined = none. */
  progress?(label: string, total: number): { update(done: number): void; stop(): void };
  /** Ctrl-C: stop sending, abort in-flight requests, report what was measured. */
  stop?: AbortSignal;
  /** Wall ms (fault times); default Date.now. */
  wallNow?(): number;
}

/**
 * A run's result with what was observed besides the requests (faults, audit, recovery, regret)
 * and about the load client: its lag, its CPU share and the figures it could not resolve.
 */
export type ObservedResult = BenchResult & RunObservation & ClientFigures & { round?: number };

/** One run as measured: its records, result, the load and meta it was built from, and which round it was. */
export interface MeasuredRun extends ReportRun {
  result: ObservedResult;
  /** 1-based; 0 for a side's rounds pooled into one. */
  round: number;
  load: LoadResult;
  meta: RunMeta;
}

export interface BenchOutcome {
  /** Every run, rounds included, in the order they ran. */
  results: ObservedResult[];
  /** A comparison's verdict (two or more sides). */
  verdict?: Verdict;
  replay?: ReplayReport;
  /** --compare ran instead of a benchmark. */
  compared?: boolean;
  /** A stop signal (Ctrl-C) cut the benchmark short; the results are partial. */
  stopped?: boolean;
}

export async function runBench(opts: BenchOptions, deps: BenchDeps): Promise<BenchOutcome> {
  if (opts.compare) {
    deps.stdout.write(compareResults(opts.compare, deps.readFile));
    return { results: [], compared: true };
  }
  for (const [flag, path] of [["--output-json", opts.outputJson], ["--report", opts.report]] as const) {
    if (path === undefined || path === "-") continue;
    try {
      deps.checkWritable(path);
    } catch (err) {
      throw new KvcrError("OUTPUT_UNWRITABLE", `cannot write ${flag} ${path}: ${(err as Error).message}; nothing was sent`);
    }
  }
  const workloadOpts = opts.durationS !== undefined && opts.workload.trace === undefined && opts.workload.requests === undefined ? { ...opts.workload, requests: DURATION_SYNTHETIC_REQUESTS } : opts.workload;
  const points: { arrival: ArrivalSpec; label?: string }[] = opts.sweepConcurrency
    ? opts.sweepConcurrency.map((c) => ({ arrival: { kind: "concurrency", concurrency: c }, label: `c=${c}` }))
    : [{ arrival: arrivalSpecOf(opts) }];
  const rounds = opts.rounds ?? 1;
  if (rounds > 1 && opts.targets.some((t) => !("fresh" in t))) deps.logger.warn(`--rounds ${rounds} on running stacks: rounds after the first start on the cache the earlier ones left, so rounds differ by more than chance; fresh stacks (no --url-per-mode) avoid it`);
  const runs: MeasuredRun[] = [];
  const models = new Map<string, string>();
  for (let round = 1; round <= rounds && deps.stop?.aborted !== true; round++) {
    // Each round draws its own requests (and arrivals), the same for every side: rounds are independent samples.
    const workload = loadWorkload({ ...workloadOpts, seed: opts.workload.seed + round - 1 }, deps, "nothing was sent");
    for (const target of opts.targets) {
      for (const point of points) {
        if (deps.stop?.aborted) break;
        runs.push(await measureRun(target, point, round, workload, opts, deps, models));
      }
    }
  }
  const results = runs.map((r) => r.result);
  // A comparison's tables and charts show each side over all its rounds; its verdict weighs them.
  const sides = sidesOf(runs);
  const shown = sides.map((side) => poolRounds(side, opts.percentiles));
  const verdict = sides.length > 1 ? verdictOfSides(sides, opts.workload.seed) : undefined;

  let replay: ReplayReport | undefined;
  if (opts.withReplay) {
    if (opts.warmupRequests > 0) deps.logger.warn("--with-replay: the simulation has no warm-up; its cache starts cold while the live stack was warmed by --warmup-requests");
    const workload = loadWorkload(workloadOpts, deps, "nothing was sent");
    replay = simulateStack(workload, opts.withReplay, { arrival: points[0]!.arrival, seed: opts.workload.seed, startedMs: deps.now() }, deps);
  }

  const shaped = runs.map((r) => resultJson(r.result, r.records, { percentileMetrics: opts.percentileMetrics, metadata: opts.metadata, detailed: opts.saveDetailed }));
  const comparison = verdict ? { rounds, verdict: verdict.entries, verdict_notes: verdictNotes(verdict) } : {};
  const doc = shaped.length === 1 && !replay ? shaped[0] : { ...comparison, runs: shaped, ...(replay ? { replay } : {}) };
  const jsonText = JSON.stringify(doc, null, 2) + "\n";
  if (opts.outputJson === "-") deps.stdout.write(jsonText);
  else {
    if (verdict) deps.stdout.write(formatVerdict(verdict));
    const pooled = shown.map((r) => r.result);
    if (pooled.length === 1) deps.stdout.write(formatResult(pooled[0]!, opts.percentiles));
    else if (pooled.length > 1) deps.stdout.write(formatSideBySide(pooled, opts.percentiles, rounds > 1 ? `each side over its ${rounds} rounds` : undefined));
    for (const r of results) deps.stdout.write(formatObserved(r));
    if (replay) deps.stdout.write(`\nReplay prediction vs live measurement (${opts.withReplay!.numWorkers} simulated worker(s), router ${opts.withReplay!.routerMode}):\n${formatPrediction(predictionFigures(replay, results[0]!))}`);
  }
  if (opts.outputJson !== undefined && opts.outputJson !== "-") write(deps, "--output-json", opts.outputJson, jsonText);
  if (opts.saveResult && results.length > 0) {
    const first = results[0]!;
    const name = { label: opts.label, backend: first.backend, requestRate: first.request_rate, maxConcurrency: opts.maxConcurrency, model: first.model_id };
    const path = saveResult(opts.saveResult, doc, name, { readFile: deps.readFile, write: (p, t) => write(deps, "--save-result", p, t) });
    deps.logger.info(`result saved to ${path}`);
  }
  if (opts.report !== undefined && shown.length > 0) {
    write(deps, "--report", opts.report, renderHtml(shown, { title: `kvcr-mock bench: ${shown.map((r) => r.label).join(" vs ")}`, percentiles: opts.percentiles, header: reportHeader(opts), verdict: verdict ? verdictHtml(verdict) : undefined, rounds }));
    deps.logger.info(`report written to ${opts.report}`);
  }
  return { results, ...(verdict ? { verdict } : {}), replay, ...(deps.stop?.aborted ? { stopped: true } : {}) };
}

/**
 * 130 when a stop signal cut the run short (the shell's code for SIGINT; the partial result was
 * still written), 1 when a run completed no request (nothing was measured), else 0; partial
 * failures are results.
 */
export function benchExitCode(outcome: BenchOutcome): 0 | 1 | 130 {
  if (outcome.compared) return 0;
  if (outcome.stopped) return 130;
  return outcome.results.length === 0 || outcome.results.some((r) => r.completed === 0) ? 1 : 0;
}

function write(deps: BenchDeps, flag: string, path: string, text: string): void {
  try {
    deps.writeFile(path, text);
  } catch (err) {
    throw new KvcrError("OUTPUT_FAILED", `cannot write ${flag} ${path}: ${(err as Error).message}`);
  }
}
