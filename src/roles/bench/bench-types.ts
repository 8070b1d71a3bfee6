// The types bench's parts share: its options and dependencies, the targets and fresh stacks it
// runs against, one measured run and its result, and the outcome. A home of their own, so the
// orchestrator (run-bench.ts), one run (measure-run.ts) and the report's writers all import them
// without importing one another.
import type { GoodputSlo } from "../../config/bench.ts";
import type { BenchAdapterFigures, LoraAssignment } from "./lora-assignment.ts";
import type { ScheduleEntry } from "../../config/fault-schedule.ts";
import type { ReplayReport } from "../../core/replay/report.ts";
import type { PrefillTiming } from "../../core/routing/regret.ts";
import type { Verdict } from "../../core/stats/verdict.ts";
import type { ProcessControl } from "../shared/stack/fault-runner.ts";
import type { SimulatedStack } from "../shared/measure/simulated-stack.ts";
import type { ArrivalOptions, WorkloadOptions } from "../shared/measure/workload.ts";
import type { ClientFigures } from "./client-resolution.ts";
import type { LoadResult } from "./drive-load.ts";
import type { BenchResult, Metric, RunMeta } from "./metrics.ts";
import type { ServerMetricsSnapshot } from "./server-metrics.ts";
import type { ReportDeps } from "../shared/measure/report-deps.ts";
import type { RunObservation } from "./observe-run.ts";
import type { TimedRecord } from "./drive-load.ts";

/** One run as the report draws it. */
export interface ReportRun {
  label: string;
  records: readonly TimedRecord[];
  result: BenchResult & RunObservation;
  startMs: number;
}

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
  /** --export-aiperf: the directory aiperf's export files go to. */
  exportAiperf?: string;
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
  /** --lora-modules: each request names one of these adapters as its model. */
  lora?: LoraAssignment;
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

/**
 * A fresh target's stack: its router mode (none: the stack file's own), `upArgs` beyond it (a
 * layout of --compare-layouts), and the stack file it starts from (--compare-stacks; else --stack-config).
 */
export interface FreshStack {
  routerMode?: string;
  upArgs?: readonly string[];
  stackConfig?: string;
}

export type BenchTarget = { label?: string; url: string; /** --url A,B,…: every frontend, requests in turn (url is the first). */ urls?: string[] } | { label?: string; fresh: FreshStack };

/** A stack started for one run (the launcher's code, as `up` runs it). */
export interface StartedStack {
  url: string;
  /** Every frontend when it runs several (requests go to each in turn); url is the first. */
  urls?: string[];
  /** Its mockers' base URLs, in stack order. */
  mockerUrls?: string[];
  /** Kill / restart of its children (fault schedules). */
  control?: ProcessControl;
  close(): Promise<void>;
}

export interface BenchDeps extends ReportDeps {
  /** Starts a fresh stack (wired to the launcher by the CLI). */
  startStack?(fresh: FreshStack): Promise<StartedStack>;
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
export type ObservedResult = BenchResult & RunObservation & ClientFigures & { round?: number; by_lora_adapter?: BenchAdapterFigures[]; server_metrics?: { before: ServerMetricsSnapshot; after: ServerMetricsSnapshot } };

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
