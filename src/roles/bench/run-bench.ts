// `kvcr-mock bench` as a function: load the workload (shared with replay), resolve the model,
// drive each run (one URL; or one stack per router mode; or one concurrency per sweep point),
// print the result table(s), write the JSON and the HTML report, and with --with-replay print
// replay's prediction of the same run beside the measurement. With --faults / --audit each run is
// observed too (observe-run.ts); --compare prints two earlier results side by side instead.
import type { GoodputSlo } from "../../config/bench.ts";
import type { ScheduleEntry } from "../../config/fault-schedule.ts";
import type { BlockHasher } from "../../core/kv/block-hash.ts";
import type { ReplayReport } from "../../core/replay/report.ts";
import type { PrefillTiming } from "../../core/routing/regret.ts";
import type { ArrivalSpec } from "../../core/workload/arrivals.ts";
import type { WorkloadRequest } from "../../core/workload/workload.ts";
import { KvcrError } from "../../lib/errors.ts";
import type { Logger } from "../../lib/logger.ts";
import { errorMessage } from "../../protocol/openai-stream.ts";
import { get } from "../../transport/http/client.ts";
import type { ProcessControl } from "../fault-runner.ts";
import { simulateStack, type SimulatedStack } from "../simulated-stack.ts";
import { arrivalSpecOf, describeArrival, loadWorkload, type ArrivalOptions, type WorkloadOptions } from "../workload.ts";
import { driveLoad, type LoadResult } from "./drive-load.ts";
import { formatPrediction, formatResult, formatSideBySide } from "./format-result.ts";
import { renderHtml, type ReportRun } from "./html-report.ts";
import { reportHeader } from "./report-header.ts";
import { warmFirstRequest, warmIndexAtStart } from "./cold-cache.ts";
import { lagWarning, monitorEventLoopLag, type LagSummary } from "./event-loop-lag.ts";
import { buildResult, type BenchResult, type Metric } from "./metrics.ts";
import { waitUntilReady } from "./ready-check.ts";
import { resultJson } from "./result-json.ts";
import { saveResult } from "./save-result.ts";
import { compareResults } from "./compare-results.ts";
import { formatObserved } from "./format-observed.ts";
import { observeRun, type RunObservation } from "./observe-run.ts";
import { buildBody, type BodyOptions } from "./request-body.ts";
import { sendRequest } from "./send-request.ts";
import { predictionFigures } from "./with-replay.ts";
import { assertReachable, unreachable } from "./reachable.ts";

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

/** A run's result with what was observed besides the requests (faults, audit, recovery, regret). */
export type ObservedResult = BenchResult & RunObservation & { client_event_loop_lag?: LagSummary };

export interface BenchOutcome {
  results: ObservedResult[];
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
  const workload = loadWorkload(workloadOpts, deps, "nothing was sent");
  const points: { arrival: ArrivalSpec; label?: string }[] = opts.sweepConcurrency
    ? opts.sweepConcurrency.map((c) => ({ arrival: { kind: "concurrency", concurrency: c }, label: `c=${c}` }))
    : [{ arrival: arrivalSpecOf(opts) }];

  const runs: ReportRun[] = [];
  const models = new Map<string, string>();
  for (const target of opts.targets) {
    for (const point of points) {
      if (deps.stop?.aborted) break;
      const label = [target.label, point.label].filter(Boolean).join(" ") || undefined;
      // A fresh stack per run: every mode and every point starts from a cold cache.
      const stack = "fresh" in target ? await startFresh(target.fresh.routerMode, label, deps) : undefined;
      try {
        const url = stack?.url ?? (target as { url: string }).url;
        // A running server must answer first (--ready-check-timeout-sec waits for one instead); without --model, discoverModel asks it.
        if (!stack && opts.model !== undefined && !models.has(url) && !((opts.readyCheckTimeoutS ?? 0) > 0)) await assertReachable(url, authHeaders(opts));
        const model = opts.model ?? models.get(url) ?? (await discoverModel(url, opts, deps));
        models.set(url, model);
        // A --duration run's synthetic workload is only an upper bound: announce the duration, not the count.
        const count = workloadOpts !== opts.workload ? "requests" : `${workload.length} requests`;
        deps.logger.info(`${label ? `[${label}] ` : ""}${count} to ${url}${opts.endpoint} (model ${model}), arrivals ${describeArrival(point.arrival, opts.workload.trace !== undefined)}${opts.durationS !== undefined ? `, for ${workloadOpts !== opts.workload ? "" : "at most "}${opts.durationS} s` : ""}`);
        const observer = observeRun(
          { schedule: opts.schedule, auditIntervalS: opts.auditIntervalS, endpoints: { indexUrl: url.replace(/\/+$/, ""), mockerUrls: opts.mockerUrls ?? stack?.mockerUrls }, control: stack?.control, blockSize: opts.blockSize ?? 64, promptsAreTokens: opts.promptFormat === "tokens", timing: opts.prefillTiming },
          { logger: deps.logger, now: deps.now, wallNow: deps.wallNow ?? Date.now, hasher: deps.hasher },
        );
        const warnings: string[] = [];
        const warnAt = (w: string | undefined) => {
          if (w === undefined) return;
          warnings.push(w);
          deps.logger.warn(`${label ? `[${label}] ` : ""}${w}`);
        };
        // One cold-cache warning per run: the index before, else the first request after.
        const warmIndex = opts.withReplay ? await warmIndexAtStart(url) : undefined;
        warnAt(warmIndex);
        let load: LoadResult;
        // Real time, whatever clock the run uses: it is this process's loop that is measured.
        const lag = monitorEventLoopLag();
        try {
          load = await runOne(workload, point.arrival, url, model, label, opts, deps, (t0) => observer.start(t0));
        } catch (err) {
          lag.stop(NaN);
          await observer.finish([], workload).catch(() => {}); // stops the schedule and the audit
          throw err;
        }
        const observed = await observer.finish(load.records, workload);
        const built = buildResult(load, runMeta(opts, url, model, point.arrival, label), opts.percentiles);
        const lagSummary = lag.stop(built.median_itl_ms);
        warnAt(lagWarning(lagSummary));
        if (opts.withReplay && opts.warmupRequests === 0 && warmIndex === undefined) warnAt(warmFirstRequest(load.records));
        const result: ObservedResult = { ...built, warnings, client_event_loop_lag: lagSummary, ...observed };
        runs.push({ label: label ?? "run", records: load.records, result, startMs: load.startMs });
        logFailures(result, label, deps.logger);
      } finally {
        await stack?.close();
      }
    }
  }
  const results = runs.map((r) => r.result);

  let replay: ReplayReport | undefined;
  if (opts.withReplay) {
    if (opts.warmupRequests > 0) deps.logger.warn("--with-replay: the simulation has no warm-up; its cache starts cold while the live stack was warmed by --warmup-requests");
    replay = simulateStack(workload, opts.withReplay, { arrival: points[0]!.arrival, seed: opts.workload.seed, startedMs: deps.now() }, deps);
  }

  const shaped = runs.map((r) => resultJson(r.result, r.records, { percentileMetrics: opts.percentileMetrics, metadata: opts.metadata, detailed: opts.saveDetailed }));
  const doc = shaped.length === 1 && !replay ? shaped[0] : { runs: shaped, ...(replay ? { replay } : {}) };
  const jsonText = JSON.stringify(doc, null, 2) + "\n";
  if (opts.outputJson === "-") deps.stdout.write(jsonText);
  else {
    if (results.length === 1) deps.stdout.write(formatResult(results[0]!, opts.percentiles));
    else if (results.length > 1) deps.stdout.write(formatSideBySide(results, opts.percentiles));
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
  if (opts.report !== undefined && runs.length > 0) {
    write(deps, "--report", opts.report, renderHtml(runs, { title: `kvcr-mock bench: ${runs.map((r) => r.label).join(" vs ")}`, percentiles: opts.percentiles, header: reportHeader(opts) }));
    deps.logger.info(`report written to ${opts.report}`);
  }
  return { results, replay, ...(deps.stop?.aborted ? { stopped: true } : {}) };
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

async function runOne(workload: readonly WorkloadRequest[], arrival: ArrivalSpec, url: string, model: string, label: string | undefined, opts: BenchOptions, deps: BenchDeps, onStart: (startMs: number) => void): Promise<LoadResult> {
  const body: BodyOptions = { model: opts.servedModelName ?? model, endpoint: opts.endpoint, promptFormat: opts.promptFormat, stream: opts.stream, ignoreEos: opts.ignoreEos, extra: opts.bodyExtra };
  const endpointUrl = url.replace(/\/+$/, "") + opts.endpoint;
  const headers = authHeaders(opts);
  let sent = 0;
  const prefix = opts.requestIdPrefix;
  const sendOne = (req: WorkloadRequest, signal: AbortSignal | undefined) => {
    const tokens = new Uint32Array(req.inputLength);
    req.writeTokens(tokens);
    const id = sent++;
    return sendRequest(
      { url: endpointUrl, body: buildBody(body, tokens, req.outputLength), stream: opts.stream, headers: prefix === undefined ? headers : { ...headers, "x-request-id": `${prefix}${id}` }, timeoutMs: opts.requestTimeoutS * 1000, workerHeader: opts.workerHeader, inputLength: req.inputLength, signal, keepText: opts.saveDetailed },
      deps.now,
    );
  };
  if ((opts.readyCheckTimeoutS ?? 0) > 0) await waitUntilReady(opts.readyCheckTimeoutS!, { send: () => sendOne(workload[0]!, deps.stop), now: deps.now, sleep: deps.sleep, stop: deps.stop });
  // A --duration run's generated workload is an upper bound, not the count it will send.
  const durationBound = opts.durationS !== undefined && opts.workload.trace === undefined && opts.workload.requests === undefined;
  const progress = deps.progress?.(label ?? "bench", durationBound ? 0 : workload.length);
  try {
    return await driveLoad(
      { workload, arrival, seed: opts.workload.seed, warmupRequests: opts.warmupRequests, durationMs: opts.durationS !== undefined ? opts.durationS * 1000 : undefined, maxInFlight: opts.maxInFlight },
      {
        send: sendOne,
        now: deps.now,
        sleep: deps.sleep,
        onProgress: progress ? (done) => progress.update(done) : undefined,
        stop: deps.stop,
        onStart,
      },
    );
  } finally {
    progress?.stop();
  }
}

async function startFresh(routerMode: string, label: string | undefined, deps: BenchDeps): Promise<StartedStack> {
  if (!deps.startStack) throw new KvcrError("NO_LAUNCHER", "a fresh stack per run needs the launcher, which this build cannot reach; pass running stacks with --url-per-mode");
  deps.logger.info(`${label ? `[${label}] ` : ""}starting a fresh stack (router ${routerMode})`);
  return deps.startStack(routerMode);
}

async function discoverModel(url: string, opts: BenchOptions, deps: BenchDeps): Promise<string> {
  const modelsUrl = url.replace(/\/+$/, "") + "/v1/models";
  let res: Response;
  try {
    res = await get(modelsUrl, { headers: authHeaders(opts), signal: AbortSignal.timeout(10_000) });
  } catch (err) {
    throw unreachable(url, err);
  }
  const text = await res.text();
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    doc = undefined;
  }
  const first = (doc as { data?: { id?: unknown }[] } | undefined)?.data?.[0]?.id;
  if (res.status !== 200 || typeof first !== "string") {
    throw new KvcrError("MODEL_UNKNOWN", `no --model given and ${modelsUrl} lists none (HTTP ${res.status}: ${doc ? errorMessage(doc) : text.slice(0, 120)}); pass --model`);
  }
  deps.logger.info(`model: ${first} (the first one ${modelsUrl} lists)`);
  return first;
}

function authHeaders(opts: BenchOptions): Record<string, string> {
  return { ...(opts.apiKey ? { authorization: `Bearer ${opts.apiKey}` } : {}), ...opts.headers };
}

function runMeta(opts: BenchOptions, url: string, model: string, arrival: ArrivalSpec, label: string | undefined) {
  return {
    backend: opts.backend ?? (/chat\/completions/.test(opts.endpoint) ? "openai-chat" : "openai"),
    modelId: model,
    baseUrl: url,
    endpoint: opts.endpoint,
    requestRate: arrival.kind === "rate" && arrival.requestsPerSecond !== Infinity ? arrival.requestsPerSecond : ("inf" as const),
    maxConcurrency: arrival.kind === "concurrency" ? arrival.concurrency : (opts.maxInFlight ?? null),
    warmupRequests: opts.warmupRequests,
    label: label ?? opts.label,
    burstiness: arrival.kind === "rate" ? (arrival.burstiness ?? 1) : 1,
    tokenizerId: opts.tokenizerId,
    goodput: opts.goodput,
  };
}

function logFailures(r: BenchResult, label: string | undefined, logger: Logger): void {
  const at = label ? `[${label}] ` : "";
  const first = r.errors[0] ? ` (first: ${r.errors[0]})` : "";
  const kinds = Object.entries(r.error_breakdown).map(([k, v]) => `${k}: ${v}`).join(", ");
  if (r.aborted > 0) logger.warn(`${at}${r.aborted} in-flight request(s) aborted by the stop (counted as aborted, not failed)`);
  if (r.completed === 0 && r.failed > 0) logger.error(`${at}no request completed: all ${r.failed} failed [${kinds}]${first}; exit status 1`);
  else if (r.failed > 0) logger.warn(`${at}${r.failed} of ${r.failed + r.completed} requests failed [${kinds}]${first}; the figures cover the ${r.completed} that completed`);
  if (r.failed > 0 && r.errors.some((e) => /ignore_eos|min_tokens/.test(e))) logger.warn(`${at}the server rejects ignore_eos / min_tokens: run with --no-ignore-eos`);
}

function write(deps: BenchDeps, flag: string, path: string, text: string): void {
  try {
    deps.writeFile(path, text);
  } catch (err) {
    throw new KvcrError("OUTPUT_FAILED", `cannot write ${flag} ${path}: ${(err as Error).message}`);
  }
}
