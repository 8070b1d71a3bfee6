// What vLLM's PrometheusStatLogger (vllm/v1/metrics/loggers.py) records for one engine, fed by a
// (worker, rank)'s arrivals, delivered steps and aborts: token counters, finished-request counts by
// reason, and the per-request and per-iteration histograms with vLLM's exact bucket bounds. Times
// are on the mocker's loop clock (ms); a step's tokens count as produced when its duration has passed.
import type { StepResult } from "../../core/engine/engine-types.ts";
import { buckets125, HistogramSeries } from "../../protocol/prometheus-histogram.ts";

/** vLLM's FinishReason values; every one is exported from startup (dashboards select "error"). */
export const FINISH_REASONS = ["stop", "length", "abort", "error", "repetition"] as const;
export type FinishReason = (typeof FINISH_REASONS)[number];

/** vLLM's PromptTokenStats sources, in its order. */
export const PROMPT_SOURCES = ["local_compute", "local_cache_hit", "external_kv_transfer"] as const;

export const TTFT_BUCKETS_S = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80, 160, 640, 2560];
export const ITL_BUCKETS_S = [0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80];
export const REQUEST_LATENCY_BUCKETS_S = [0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 40, 50, 60, 120, 240, 480, 960, 1920, 7680];
export const ITERATION_TOKEN_BUCKETS = [1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384];
export const PARAMS_N_BUCKETS = [1, 2, 5, 10, 20];
/** vLLM's OffloadPromMetrics transfer-size buckets, in bytes. */
export const OFFLOAD_SIZE_BUCKETS = [1e6, 5e6, 10e6, 20e6, 40e6, 60e6, 80e6, 100e6, 150e6, 200e6];

/** The offloading connector's transfer_type: `{src medium}_to_{dst medium}`. */
export const TRANSFER_TYPES = { d2h: "GPU_to_CPU", h2d: "CPU_to_GPU" } as const;

export interface OffloadTotals {
  bytes: number;
  seconds: number;
  size: HistogramSeries;
}

interface Tracked {
  arrivalMs: number;
  maxTokens: number;
  scheduledAtMs: number;
  firstTokenMs: number;
  lastTokenMs: number;
  generated: number;
}

const py = (bounds: readonly number[]) => new HistogramSeries(bounds, "python");

export class VllmRankStats {
  promptTokens = 0;
  generationTokens = 0;
  cachedPromptTokens = 0;
  readonly promptBySource: Record<(typeof PROMPT_SOURCES)[number], number> = { local_compute: 0, local_cache_hit: 0, external_kv_transfer: 0 };
  readonly success: Record<FinishReason, number> = { stop: 0, length: 0, abort: 0, error: 0, repetition: 0 };
  readonly histograms;
  /** Per transfer_type, created at its first copy (as vLLM creates these series on first use). */
  readonly offload = new Map<string, OffloadTotals>();
  private readonly live = new Map<string, Tracked>();

  constructor(maxModelLen: number) {
    const lengths = buckets125(maxModelLen);
    // Keys are the vLLM family names without the `vllm:` prefix.
    this.histograms = {
      time_to_first_token_seconds: py(TTFT_BUCKETS_S),
      inter_token_latency_seconds: py(ITL_BUCKETS_S),
      request_time_per_output_token_seconds: py(ITL_BUCKETS_S),
      e2e_request_latency_seconds: py(REQUEST_LATENCY_BUCKETS_S),
      request_queue_time_seconds: py(REQUEST_LATENCY_BUCKETS_S),
      request_inference_time_seconds: py(REQUEST_LATENCY_BUCKETS_S),
      request_prefill_time_seconds: py(REQUEST_LATENCY_BUCKETS_S),
      request_decode_time_seconds: py(REQUEST_LATENCY_BUCKETS_S),
      request_prompt_tokens: py(lengths),
      request_generation_tokens: py(lengths),
      request_prefill_kv_computed_tokens: py(lengths),
      request_max_num_generation_tokens: py(lengths),
      request_params_n: py(PARAMS_N_BUCKETS),
      request_params_max_tokens: py(lengths),
      iteration_tokens_total: py(ITERATION_TOKEN_BUCKETS),
    } as const;
  }

  /** A request reached this rank (vLLM's arrival_time); max_tokens is always set on /v1/generate. */
  arrived(id: string, maxTokens: number, nowMs: number): void {
    this.live.set(id, { arrivalMs: nowMs, maxTokens, scheduledAtMs: nowMs, firstTokenMs: -1, lastTokenMs: -1, generated: 0 });
  }

  /** A step's results reach the clients at `nowMs`: TTFT, ITL, token counters, finished requests. */
  delivered(result: StepResult, nowMs: number): void {
    const h = this.histograms;
    if (result.transfers) {
      for (const lane of ["d2h", "h2d"] as const) {
        for (const op of result.transfers[lane]) {
          const type = TRANSFER_TYPES[lane];
          let t = this.offload.get(type);
          if (!t) this.offload.set(type, (t = { bytes: 0, seconds: 0, size: py(OFFLOAD_SIZE_BUCKETS) }));
          t.bytes += op.bytes;
          t.seconds += op.ms / 1000;
          t.size.observe(op.bytes);
        }
      }
    }
    let computedPrompt = 0;
    for (const f of result.firstTokens ?? []) {
      const t = this.live.get(f.requestId);
      if (!t) continue;
      t.scheduledAtMs = f.scheduledAtMs < 0 ? nowMs : f.scheduledAtMs;
      t.firstTokenMs = nowMs;
      // vLLM counts a prompt once, when its first token is out, split by where its KV came from.
      const external = f.hostLoadedTokens + (f.remoteLoadedTokens ?? 0);
      const local = f.cachedTokens - external;
      const computed = f.promptTokens - f.cachedTokens;
      this.promptTokens += f.promptTokens;
      this.promptBySource.local_compute += computed;
      this.promptBySource.local_cache_hit += local;
      this.promptBySource.external_kv_transfer += external;
      this.cachedPromptTokens += f.cachedTokens;
      computedPrompt += computed;
      h.time_to_first_token_seconds.observe(seconds(nowMs - t.arrivalMs));
    }
    for (const tok of result.tokens) {
      const t = this.live.get(tok.requestId);
      if (!t) continue;
      if (t.lastTokenMs >= 0) h.inter_token_latency_seconds.observe(seconds(nowMs - t.lastTokenMs));
      t.lastTokenMs = nowMs;
      t.generated++;
    }
    this.generationTokens += result.tokens.length;
    if (result.tokens.length > 0) h.iteration_tokens_total.observe(computedPrompt + result.tokens.length);
    for (const f of result.finished) {
      const t = this.live.get(f.requestId);
      if (!t) continue;
      this.live.delete(f.requestId);
      this.success.length++; // the mock generates exactly max_tokens: every finish is a length stop
      const first = t.firstTokenMs;
      const decodeS = seconds(nowMs - first);
      h.e2e_request_latency_seconds.observe(seconds(nowMs - t.arrivalMs));
      h.request_queue_time_seconds.observe(seconds(t.scheduledAtMs - t.arrivalMs));
      h.request_prefill_time_seconds.observe(seconds(first - t.scheduledAtMs));
      h.request_inference_time_seconds.observe(seconds(nowMs - t.scheduledAtMs));
      h.request_decode_time_seconds.observe(decodeS);
      h.request_time_per_output_token_seconds.observe(f.completionTokens > 1 ? decodeS / (f.completionTokens - 1) : 0);
      h.request_prompt_tokens.observe(f.promptTokens);
      h.request_generation_tokens.observe(f.completionTokens);
      h.request_prefill_kv_computed_tokens.observe(f.promptTokens - Math.max(f.cachedTokens, 0));
      h.request_max_num_generation_tokens.observe(f.completionTokens); // n = 1: the one sequence's length
      h.request_params_n.observe(1);
      h.request_params_max_tokens.observe(t.maxTokens);
    }
  }

  /** The client went away or the process is stopping: vLLM counts it finished with reason abort. */
  aborted(id: string): void {
    if (this.live.delete(id)) this.success.abort++;
  }
}

/** Never negative: a step that started on the loop's clock before a late arrival still waited 0. */
function seconds(ms: number): number {
  return ms > 0 ? ms / 1000 : 0;
}
