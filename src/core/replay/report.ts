// The `kvcr-mock replay` report, with the metric names of vLLM's benchmark_serving (and aiperf's
// units): completed/failed, duration, throughputs, TTFT/TPOT/ITL/E2EL summaries, plus what only
// a replay knows: prefix-cache reuse, per-worker spread, wall and simulated time.
import type { AdapterFigures } from "./lora-report.ts";
import type { RegretSummary } from "../routing/regret.ts";
import type { SimulationResult } from "./simulator.ts";
import type { SessionFigures } from "./session-report.ts";
import { metricFields, servingTotals, type ServingTotals } from "./serving-figures.ts";

/** `duration`: seconds from the first arrival to the last token (virtual time). */
export interface ReplayReport extends ServingTotals {
  mean_ttft_ms: number; median_ttft_ms: number; std_ttft_ms: number; p50_ttft_ms: number; p90_ttft_ms: number; p99_ttft_ms: number;
  mean_tpot_ms: number; median_tpot_ms: number; std_tpot_ms: number; p50_tpot_ms: number; p90_tpot_ms: number; p99_tpot_ms: number;
  mean_itl_ms: number; median_itl_ms: number; std_itl_ms: number; p50_itl_ms: number; p90_itl_ms: number; p99_itl_ms: number;
  mean_e2el_ms: number; median_e2el_ms: number; std_e2el_ms: number; p50_e2el_ms: number; p90_e2el_ms: number; p99_e2el_ms: number;
  /** Prompt tokens not recomputed (G1 hits + G2 loads) over prompt tokens, completed requests. */
  prefix_cache_reuse_ratio: number;
  cached_tokens: number;
  host_loaded_tokens: number;
  num_workers: number;
  data_parallel_size: number;
  router_mode: string;
  requests_per_worker: number[];
  /** Per worker, per data-parallel rank. */
  requests_per_rank: number[][];
  preemptions: number;
  /** G2 blocks stored over the run (host `stored` blocks, all engines): G2 traffic. */
  host_blocks_stored: number;
  /** Host `stored` events the engines refused: a block's token ids were unrecoverable. */
  host_stores_dropped: number;
  simulated_time_s: number;
  wall_time_s: number;
  /** Simulated requests per wall-clock second. */
  replay_speed_requests_per_s: number;
  /** Requests shed because every worker was over the router's busy thresholds (part of `failed`). */
  rejected: number;
  /** Requests the router held back while every worker was saturated (its queue threshold). */
  queued: number;
  /** Each routed request's chosen true overlap and queue depth against the best candidate's at its decision (absent with regret off). */
  regret?: RegretSummary;
  /** First failures (request index in the workload, reason). */
  errors: { request: number; error: string }[];
  /** Session workloads: per turn index and per session (session-report.ts). */
  sessions?: SessionFigures;
  /** Per LoRA adapter (null = the base model), when the workload names adapters. */
  by_lora_adapter?: AdapterFigures[];
}

export const REPORT_ERROR_LIMIT = 20;
/** The percentiles a replay reports (the p50/p90/p99 keys of ReplayReport). */
const REPORT_PERCENTILES = [50, 90, 99] as const;

/** Builds the report; reorders sim.itlMs (percentiles select in place). */
export function buildReport(sim: SimulationResult, meta: { routerMode: string; wallTimeMs: number }): ReplayReport {
  const ok: number[] = [];
  for (let i = 0; i < sim.numRequests; i++) if (!sim.errors.has(i)) ok.push(i);
  const ttft = new Float64Array(ok.length);
  const e2el = new Float64Array(ok.length);
  const tpot: number[] = [];
  let input = 0, output = 0, cached = 0, hostLoaded = 0;
  let start = Infinity, end = -Infinity;
  for (let k = 0; k < ok.length; k++) {
    const i = ok[k]!;
    const arrival = sim.arrivalMs[i]!;
    const first = sim.firstTokenMs[i]!;
    const last = sim.lastTokenMs[i]!;
    const out = sim.outputTokens[i]!;
    ttft[k] = first - arrival;
    e2el[k] = last - arrival;
    if (out > 1) tpot.push((last - first) / (out - 1));
    input += sim.promptTokens[i]!;
    output += out;
    cached += sim.cachedTokens[i]!;
    hostLoaded += sim.hostLoadedTokens[i]!;
    start = Math.min(start, arrival);
    end = Math.max(end, last);
  }
  const durationS = ok.length > 0 ? (end - start) / 1000 : 0;
  const wallS = meta.wallTimeMs / 1000;
  const errors = [...sim.errors].slice(0, REPORT_ERROR_LIMIT).map(([request, error]) => ({ request, error }));
  return {
    ...servingTotals({ completed: ok.length, failed: sim.errors.size, durationS, inputTokens: input, outputTokens: output }),
    ...metricFields("ttft", ttft, REPORT_PERCENTILES),
    ...metricFields("tpot", Float64Array.from(tpot), REPORT_PERCENTILES),
    ...metricFields("itl", sim.itlMs, REPORT_PERCENTILES), // in place: no copy of millions of gaps
    ...metricFields("e2el", e2el, REPORT_PERCENTILES),
    prefix_cache_reuse_ratio: input > 0 ? cached / input : 0,
    cached_tokens: cached,
    host_loaded_tokens: hostLoaded,
    num_workers: sim.requestsPerWorker.length,
    data_parallel_size: sim.requestsPerRank[0]?.length ?? 1,
    router_mode: meta.routerMode,
    requests_per_worker: sim.requestsPerWorker,
    requests_per_rank: sim.requestsPerRank,
    preemptions: sim.engines.reduce((s, e) => s + e.preemptions, 0),
    host_blocks_stored: sim.engines.reduce((s, e) => s + e.hostBlocksStored, 0),
    host_stores_dropped: sim.engines.reduce((s, e) => s + e.eventsDropped, 0),
    simulated_time_s: sim.simulatedMs / 1000,
    wall_time_s: wallS,
    replay_speed_requests_per_s: wallS > 0 ? sim.numRequests / wallS : 0,
    rejected: sim.rejected,
    queued: sim.queued,
    regret: sim.regret,
    errors,
  } as ReplayReport;
}
