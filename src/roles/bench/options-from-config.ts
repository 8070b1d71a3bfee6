// Resolved `bench` config → the bench role's options (the parsing of list flags was validated by
// benchProblems; the engine and router flags describe the stack for --with-replay).
import { timingProfileOf } from "../shared/measure/engine-config-from-options.ts";
import { parseLoraNames, parseZipf } from "../../config/lora-modules.ts";
import {
  auditIntervalOf,
  isChat,
  parseCompare,
  parseGoodput,
  parseMockerUrls,
  parsePairs,
  parsePercentileMetrics,
  parsePercentiles,
  parseModes,
  parseUrlPerMode,
  RANDOM_DEFAULTS,
  roundsOf,
  targetUrl,
  type BenchConfig,
  type GoodputSlo,
} from "../../config/bench.ts";
import { loadSchedule } from "../../config/fault-schedule.ts";
import { splitUrls } from "../../config/bench-urls.ts";
import { layoutUpArgs, parseLayouts, type Layout } from "../../config/bench-layouts.ts";
import { parseCompareStacks, parseCompareUrls } from "../../config/bench-compare-targets.ts";
import { simulatedStackFrom } from "../shared/measure/simulated-stack.ts";
import { arrivalOptionsFrom, DEFAULT_AGENTIC_SESSIONS, workloadOptionsFrom } from "../shared/measure/workload.ts";
import type { BenchOptions, BenchTarget } from "./bench-types.ts";

/** `readFile` reads the --faults schedule (a bad one throws ConfigError: exit 2, before anything runs). */
export function benchOptionsFrom(c: BenchConfig, readFile?: (path: string) => string): BenchOptions {
  const modes = c.compareRouterModes !== undefined ? (parseModes(c.compareRouterModes) as string[]) : undefined;
  const perMode = c.urlPerMode !== undefined ? (parseUrlPerMode(c.urlPerMode) as Map<string, string>) : undefined;
  // Without a URL, each run gets a fresh stack (one per mode; --router-mode for a sweep alone).
  const url = targetUrl(c);
  const layouts = c.compareLayouts !== undefined ? (parseLayouts(c.compareLayouts) as Layout[]) : undefined;
  const namedUrls = parseCompareUrls(c);
  const namedStacks = parseCompareStacks(c);
  const targets: BenchTarget[] =
    namedUrls
      ? namedUrls.map(([label, u]) => ({ label, url: splitUrls(u)[0]! }))
    : namedStacks
      ? namedStacks.map(([label, stackConfig]) => ({ label, fresh: { stackConfig } }))
    : url !== undefined
      ? [{ url, ...(splitUrls(c.url ?? "").length > 1 ? { urls: splitUrls(c.url!) } : {}) }]
      : layouts
        ? layouts.map((l) => ({ label: l, fresh: { routerMode: c.routerMode, upArgs: layoutUpArgs(l, c) } }))
      : modes && perMode
        ? modes.map((m) => ({ label: m, url: perMode.get(m)! }))
        : (modes ?? [c.routerMode]).map((m) => ({ label: modes ? m : undefined, fresh: { routerMode: m } }));
  // --backend openai-chat without --endpoint: vLLM's pairing is /v1/chat/completions.
  const endpoint = c.backend === "openai-chat" && c.endpoint === "/v1/completions" ? "/v1/chat/completions" : c.endpoint;
  const finiteRate = c.requestRate !== undefined && c.requestRate !== Infinity;
  const sampling = { temperature: c.temperature, top_p: c.topP, top_k: c.topK, min_p: c.minP, frequency_penalty: c.frequencyPenalty, presence_penalty: c.presencePenalty, repetition_penalty: c.repetitionPenalty };
  const bodyExtra = { ...Object.fromEntries(Object.entries(sampling).filter(([, v]) => v !== undefined)), ...(c.extraBody as Record<string, unknown> | undefined) };
  // --dataset-name agentic without --sessions: the agentic workload at its default size.
  const workload = workloadOptionsFrom(c.datasetName === "agentic" && c.trace === undefined ? { ...c, sessions: c.sessions ?? DEFAULT_AGENTIC_SESSIONS } : c);
  return {
    targets,
    model: c.model,
    servedModelName: c.servedModelName,
    backend: c.backend,
    label: c.label,
    tokenizerId: c.tokenizer,
    endpoint,
    // A chat message is text: token ids cannot go in it.
    promptFormat: isChat(endpoint) ? "text" : c.promptFormat,
    stream: c.stream,
    ignoreEos: c.ignoreEos,
    apiKey: c.apiKey,
    headers: c.header !== undefined ? (parsePairs(c.header, "--header") as Record<string, string>) : undefined,
    requestIdPrefix: c.requestIdPrefix,
    bodyExtra,
    ...(c.loraModules !== undefined ? { lora: { names: parseLoraNames(c.loraModules) as string[], assignment: c.loraAssignment, ...(c.loraPopularity !== undefined ? { zipf: parseZipf(c.loraPopularity) as number } : {}) } } : {}),
    workload: {
      ...workload,
      synthetic: { ...workload.synthetic, outputTokens: c.outputLen ?? workload.synthetic.outputTokens },
      random: useRandomDataset(c)
        ? {
            inputLen: c.inputLen ?? c.randomInputLen ?? RANDOM_DEFAULTS.inputLen,
            outputLen: c.outputLen ?? c.randomOutputLen ?? RANDOM_DEFAULTS.outputLen,
            prefixLen: c.randomPrefixLen ?? RANDOM_DEFAULTS.prefixLen,
            rangeRatio: c.randomRangeRatio ?? RANDOM_DEFAULTS.rangeRatio,
          }
        : undefined,
    },
    ...arrivalOptionsFrom(c),
    burstiness: c.burstiness,
    // vLLM's bench scales its gaps so the last arrival is at n / rate; so does this one.
    scaleToRate: true,
    maxConcurrency: c.maxConcurrency,
    maxInFlight: finiteRate ? c.maxConcurrency : undefined,
    goodput: c.goodput !== undefined ? (parseGoodput(c.goodput) as GoodputSlo) : undefined,
    percentileMetrics: c.percentileMetrics !== undefined ? (parsePercentileMetrics(c.percentileMetrics) as BenchOptions["percentileMetrics"]) : undefined,
    metadata: c.metadata !== undefined ? (parsePairs(c.metadata, "--metadata") as Record<string, string>) : undefined,
    saveDetailed: c.saveDetailed,
    readyCheckTimeoutS: c.readyCheckTimeoutSec,
    saveResult: c.saveResult || c.appendResult ? { dir: c.resultDir, filename: c.resultFilename, append: c.appendResult } : undefined,
    sweepConcurrency: c.sweepConcurrency,
    rounds: roundsOf(c),
    warmupRequests: c.warmupRequests,
    durationS: c.duration,
    percentiles: parsePercentiles(c.percentiles) as number[],
    requestTimeoutS: c.requestTimeout,
    workerHeader: c.workerHeader.toLowerCase(),
    outputJson: c.outputJson,
    exportAiperf: c.exportAiperf,
    report: c.report,
    // Workers and ranks kept apart, as replay does.
    withReplay: c.withReplay ? simulatedStackFrom(c) : undefined,
    schedule: c.faults !== undefined && readFile ? loadSchedule(c.faults, readFile) : undefined,
    auditIntervalS: auditIntervalOf(c),
    mockerUrls: c.mockerUrls !== undefined ? parseMockerUrls(c.mockerUrls).urls : undefined,
    blockSize: c.blockSize,
    prefillTiming: { timingModel: c.timingModel, prefillMs: c.prefillMs, maxNumBatchedTokens: c.maxNumBatchedTokens, timingProfile: timingProfileOf(c).timingProfile },
    compare: c.compare !== undefined ? (parseCompare(c.compare) as [string, string]) : undefined,
  };
}

/**
 * vLLM's random dataset: asked for by name, or implied by a --random-* / --input-len flag given
 * without --dataset-name (vLLM's default dataset is random); a --trace wins over both.
 */
export function useRandomDataset(c: BenchConfig): boolean {
  if (c.trace !== undefined) return false;
  if (c.datasetName !== undefined) return c.datasetName === "random";
  return [c.inputLen, c.randomInputLen, c.randomOutputLen, c.randomPrefixLen, c.randomRangeRatio].some((v) => v !== undefined);
}
