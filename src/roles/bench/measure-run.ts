// One measured run of `bench`: a fresh stack when the target asks for one, the model, the load
// driven at the target (with the fault schedule and audit watching), and the run's result with
// what makes its figures less trustworthy — the client's event-loop lag and CPU use, and which
// latency figures the client could not resolve (client-resolution.ts).
import { splitRecordsByAdapter } from "./lora-assignment.ts";
import type { ArrivalSpec } from "../../core/workload/arrivals.ts";
import type { WorkloadRequest } from "../../core/workload/workload.ts";
import { KvcrError } from "../../lib/errors.ts";
import type { Logger } from "../../lib/logger.ts";
import { errorMessage } from "../../protocol/openai-stream.ts";
import { get } from "../../transport/http/client.ts";
import { describeArrival, describeSessionArrival } from "../shared/measure/workload.ts";
import { clientTimingOf } from "./pool-rounds.ts";
import { unresolvedFigures } from "./client-resolution.ts";
import { warmFirstRequest, warmIndexAtStart } from "./cold-cache.ts";
import type { LoadResult } from "./drive-load.ts";
import { driveLoad } from "./drive-load.ts";
import { driveSessions } from "./drive-sessions.ts";
import { isSessionWorkload } from "../../core/replay/session-run.ts";
import { lagWarning, monitorEventLoopLag, saturationWarning } from "./event-loop-lag.ts";
import { buildResult, type BenchResult, type RunMeta } from "./metrics.ts";
import { observeRun } from "./observe-run.ts";
import { waitUntilReady } from "./ready-check.ts";
import { buildBody, type BodyOptions } from "./request-body.ts";
import type { BenchDeps, BenchOptions, BenchTarget, FreshStack, MeasuredRun, ObservedResult, StartedStack } from "./bench-types.ts";
import { sendRequest } from "./send-request.ts";
import { snapshotServerMetrics } from "./server-metrics.ts";
import { FrontendRotation } from "./frontend-rotation.ts";
import { assertReachable, unreachable } from "./reachable.ts";

export interface RunPoint {
  arrival: ArrivalSpec;
  label?: string;
}

/** Runs `workload` once at `target` (a fresh stack is started and stopped around it). */
export async function measureRun(target: BenchTarget, point: RunPoint, round: number, workload: readonly WorkloadRequest[], opts: BenchOptions, deps: BenchDeps, models: Map<string, string>): Promise<MeasuredRun> {
  const label = [target.label, point.label].filter(Boolean).join(" ") || undefined;
  const tag = `${label ? `[${label}] ` : ""}${(opts.rounds ?? 1) > 1 ? `[round ${round}] ` : ""}`;
  // A fresh stack per run: every mode, point and round starts from a cold cache.
  const stack = "fresh" in target ? await startFresh(target.fresh, tag, deps) : undefined;
  try {
    const url = stack?.url ?? (target as { url: string }).url;
    // A running server must answer first (--ready-check-timeout-sec waits for one instead); without --model, discoverModel asks it.
    if (!stack && opts.model !== undefined && !models.has(url) && !((opts.readyCheckTimeoutS ?? 0) > 0)) await assertReachable(url, authHeaders(opts));
    const model = opts.model ?? models.get(url) ?? (await discoverModel(url, opts, deps));
    models.set(url, model);
    // A --duration run's synthetic workload is only an upper bound: announce the duration, not the count.
    const bound = durationBound(opts);
    deps.logger.info(`${tag}${bound ? "requests" : `${workload.length} requests`} to ${url}${opts.endpoint} (model ${model}), arrivals ${describeSessionArrival(workload, point.arrival, opts.maxSessions) ?? describeArrival(point.arrival, opts.workload.trace !== undefined)}${opts.durationS !== undefined ? `, for ${bound ? "" : "at most "}${opts.durationS} s` : ""}`);
    const observer = observeRun(
      { schedule: opts.schedule, auditIntervalS: opts.auditIntervalS, endpoints: { indexUrl: url.replace(/\/+$/, ""), mockerUrls: opts.mockerUrls ?? stack?.mockerUrls }, control: stack?.control, blockSize: opts.blockSize ?? 64, promptsAreTokens: opts.promptFormat === "tokens", timing: opts.prefillTiming },
      { logger: deps.logger, now: deps.now, wallNow: deps.wallNow ?? Date.now, hasher: deps.hasher },
    );
    const warnings: string[] = [];
    const warnAt = (w: string | undefined) => {
      if (w === undefined) return;
      warnings.push(w);
      deps.logger.warn(`${tag}${w}`);
    };
    // One cold-cache warning per run: the index before, else the first request after.
    const warmIndex = opts.withReplay ? await warmIndexAtStart(url) : undefined;
    warnAt(warmIndex);
    let load: LoadResult;
    // With the per-request arrays, the server's own counters around the run (calibrate reads them).
    const metricsBefore = opts.saveDetailed ? await snapshotServerMetrics(url, authHeaders(opts)) : undefined;
    // Real time, whatever clock the run uses: it is this process's loop that is measured.
    const client = monitorEventLoopLag();
    const urls = stack?.urls ?? ("urls" in target ? target.urls : undefined);
    const rotation = urls !== undefined && urls.length > 1 ? new FrontendRotation(urls, deps.now) : undefined;
    try {
      load = await runOne(workload, point.arrival, url, model, label, opts, deps, (t0) => observer.start(t0), rotation);
    } catch (err) {
      client.stop(NaN);
      await observer.finish([], workload).catch(() => {}); // stops the schedule and the audit
      throw err;
    }
    const cpuShare = client.cpuShare();
    const metricsAfter = metricsBefore !== undefined ? await snapshotServerMetrics(url, authHeaders(opts)) : undefined;
    for (const w of rotation?.warnings() ?? []) warnAt(w);
    const observed = await observer.finish(load.records, workload);
    const meta = runMeta(opts, url, model, point.arrival, label);
    const built = buildResult(load, meta, opts.percentiles);
    // A median ITL among tokens read at once is the client's read, not the server's spacing: no yardstick for the lag then.
    const lag = client.stop(built.itl_same_read_share >= 0.5 ? NaN : built.median_itl_ms);
    warnAt(lagWarning(lag));
    warnAt(saturationWarning(cpuShare));
    if (opts.withReplay && opts.warmupRequests === 0 && warmIndex === undefined) warnAt(warmFirstRequest(load.records));
    const unresolved = unresolvedFigures(built, clientTimingOf(load.records, lag), opts.percentiles);
    const byAdapter = splitRecordsByAdapter(load.records, workload);
    const result: ObservedResult = { ...built, ...((opts.rounds ?? 1) > 1 ? { round } : {}), warnings, client_event_loop_lag: lag, client_cpu_share: cpuShare, unresolved_figures: unresolved, ...observed, ...(byAdapter ? { by_lora_adapter: byAdapter } : {}), ...(metricsAfter !== undefined ? { server_metrics: { before: metricsBefore!, after: metricsAfter } } : {}) };
    logFailures(result, tag, deps.logger);
    return { label: label ?? "run", round, records: load.records, result, startMs: load.startMs, load, meta };
  } finally {
    await stack?.close();
  }
}

async function runOne(workload: readonly WorkloadRequest[], arrival: ArrivalSpec, url: string, model: string, label: string | undefined, opts: BenchOptions, deps: BenchDeps, onStart: (startMs: number) => void, rotation?: FrontendRotation): Promise<LoadResult> {
  const body: BodyOptions = { model: opts.servedModelName ?? model, endpoint: opts.endpoint, promptFormat: opts.promptFormat, stream: opts.stream, ignoreEos: opts.ignoreEos, extra: opts.bodyExtra };
  const endpointUrl = url.replace(/\/+$/, "") + opts.endpoint;
  const headers = authHeaders(opts);
  let sent = 0;
  const prefix = opts.requestIdPrefix;
  // A turn that extends its predecessor is sent with the text the predecessor generated.
  const keepText = workload.some((r) => r.session?.extendsPrevious === true);
  const sendOne = (req: WorkloadRequest, signal: AbortSignal | undefined) => {
    const tokens = new Uint32Array(req.inputLength);
    req.writeTokens(tokens);
    const id = sent++;
    const to = (target: string) => sendRequest(
      { url: target, body: buildBody(req.loraName === undefined ? body : { ...body, model: req.loraName }, tokens, req.outputLength), stream: opts.stream, headers: prefix === undefined ? headers : { ...headers, "x-request-id": `${prefix}${id}` }, timeoutMs: opts.requestTimeoutS * 1000, workerHeader: opts.workerHeader, inputLength: req.inputLength, signal, keepText: keepText || opts.saveDetailed },
      deps.now,
    );
    return rotation ? rotation.send((base) => to(base + opts.endpoint)) : to(endpointUrl);
  };
  if ((opts.readyCheckTimeoutS ?? 0) > 0) await waitUntilReady(opts.readyCheckTimeoutS!, { send: () => sendOne(workload[0]!, deps.stop), now: deps.now, sleep: deps.sleep, stop: deps.stop });
  const progress = deps.progress?.(label ?? "bench", durationBound(opts) ? 0 : workload.length);
  try {
    // Session turns wait for their predecessors (drive-sessions.ts); other workloads are driven as scheduled.
    const drive = isSessionWorkload(workload) ? driveSessions : driveLoad;
    return await drive(
      { workload, arrival, seed: opts.workload.seed, warmupRequests: opts.warmupRequests, durationMs: opts.durationS !== undefined ? opts.durationS * 1000 : undefined, maxInFlight: opts.maxInFlight, maxSessions: opts.maxSessions },
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

/** A --duration run without a request count: its generated workload is an upper bound, not the count it sends. */
function durationBound(opts: BenchOptions): boolean {
  return opts.durationS !== undefined && opts.workload.trace === undefined && opts.workload.requests === undefined;
}

async function startFresh(fresh: FreshStack, tag: string, deps: BenchDeps): Promise<StartedStack> {
  if (!deps.startStack) throw new KvcrError("NO_LAUNCHER", "a fresh stack per run needs the launcher, which this build cannot reach; pass running stacks with --compare-urls");
  const what = [fresh.stackConfig, fresh.routerMode !== undefined ? `router ${fresh.routerMode}` : undefined, fresh.upArgs?.length ? fresh.upArgs.join(" ") : undefined].filter(Boolean).join(", ");
  deps.logger.info(`${tag}starting a fresh stack (${what})`);
  return deps.startStack(fresh);
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

function runMeta(opts: BenchOptions, url: string, model: string, arrival: ArrivalSpec, label: string | undefined): RunMeta {
  return {
    backend: opts.backend ?? (/chat\/completions/.test(opts.endpoint) ? "openai-chat" : "openai"),
    modelId: model,
    baseUrl: url,
    endpoint: opts.endpoint,
    requestRate: arrival.kind === "rate" && arrival.requestsPerSecond !== Infinity ? arrival.requestsPerSecond : "inf",
    maxConcurrency: arrival.kind === "concurrency" ? arrival.concurrency : (opts.maxInFlight ?? null),
    warmupRequests: opts.warmupRequests,
    label: label ?? opts.label,
    burstiness: arrival.kind === "rate" ? (arrival.burstiness ?? 1) : 1,
    tokenizerId: opts.tokenizerId,
    goodput: opts.goodput,
  };
}

function logFailures(r: BenchResult, tag: string, logger: Logger): void {
  const first = r.errors[0] ? ` (first: ${r.errors[0]})` : "";
  const kinds = Object.entries(r.error_breakdown).map(([k, v]) => `${k}: ${v}`).join(", ");
  if (r.aborted > 0) logger.warn(`${tag}${r.aborted} in-flight request(s) aborted by the stop (counted as aborted, not failed)`);
  if (r.completed === 0 && r.failed > 0) logger.error(`${tag}no request completed: all ${r.failed} failed [${kinds}]${first}; exit status 1`);
  else if (r.failed > 0) logger.warn(`${tag}${r.failed} of ${r.failed + r.completed} requests failed [${kinds}]${first}; the figures cover the ${r.completed} that completed`);
  if (r.failed > 0 && r.errors.some((e) => /ignore_eos|min_tokens/.test(e))) logger.warn(`${tag}the server rejects ignore_eos / min_tokens: run with --no-ignore-eos`);
}
