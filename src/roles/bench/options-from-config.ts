// Resolved `bench` config → the bench role's options (the parsing of list flags was validated by
// benchProblems; the engine and router flags describe the stack for --with-replay).
import { auditIntervalOf, parseCompare, parseMockerUrls, parsePercentiles, parseModes, parseUrlPerMode, type BenchConfig } from "../../config/bench.ts";
import { loadSchedule } from "../../config/fault-schedule.ts";
import { simulatedStackFrom } from "../simulated-stack.ts";
import { arrivalOptionsFrom, workloadOptionsFrom } from "../workload.ts";
import type { BenchOptions, BenchTarget } from "./run-bench.ts";

/** `readFile` reads the --faults schedule (a bad one throws ConfigError: exit 2, before anything runs). */
export function benchOptionsFrom(c: BenchConfig, readFile?: (path: string) => string): BenchOptions {
  const modes = c.compareRouterModes !== undefined ? (parseModes(c.compareRouterModes) as string[]) : undefined;
  const perMode = c.urlPerMode !== undefined ? (parseUrlPerMode(c.urlPerMode) as Map<string, string>) : undefined;
  // Without a URL, each run gets a fresh stack (one per mode; --router-mode for a sweep alone).
  const targets: BenchTarget[] =
    c.url !== undefined
      ? [{ url: c.url }]
      : modes && perMode
        ? modes.map((m) => ({ label: m, url: perMode.get(m)! }))
        : (modes ?? [c.routerMode]).map((m) => ({ label: modes ? m : undefined, fresh: { routerMode: m } }));
  return {
    targets,
    model: c.model,
    endpoint: c.endpoint,
    promptFormat: c.promptFormat,
    stream: c.stream,
    ignoreEos: c.ignoreEos,
    apiKey: c.apiKey,
    workload: workloadOptionsFrom(c),
    ...arrivalOptionsFrom(c),
    sweepConcurrency: c.sweepConcurrency,
    warmupRequests: c.warmupRequests,
    durationS: c.duration,
    percentiles: parsePercentiles(c.percentiles) as number[],
    requestTimeoutS: c.requestTimeout,
    workerHeader: c.workerHeader.toLowerCase(),
    outputJson: c.outputJson,
    report: c.report,
    // Workers and ranks kept apart, as replay does.
    withReplay: c.withReplay ? simulatedStackFrom(c) : undefined,
    schedule: c.faults !== undefined && readFile ? loadSchedule(c.faults, readFile) : undefined,
    auditIntervalS: auditIntervalOf(c),
    mockerUrls: c.mockerUrls !== undefined ? parseMockerUrls(c.mockerUrls).urls : undefined,
    blockSize: c.blockSize,
    prefillTiming: { timingModel: c.timingModel, prefillMs: c.prefillMs, maxNumBatchedTokens: c.maxNumBatchedTokens },
    compare: c.compare !== undefined ? (parseCompare(c.compare) as [string, string]) : undefined,
  };
}
