// Dynamo's frontend families (lib/llm/src/http/service/metrics.rs): requests by model, endpoint,
// request type, status and error type; active (and the deprecated inflight) and queued gauges; TTFT,
// ITL, duration and sequence-length histograms with Dynamo's default log buckets printed as the Rust
// crate prints them (le="0" first, "1" not "1.0"); output tokens as they stream; cancellations and
// busy rejections; per-model config gauges from the worker records.
import { HistogramVec, leText, type HistogramSeries } from "../../protocol/prometheus-histogram.ts";
import type { MetricFamily } from "../../protocol/prometheus.ts";
import type { RoutingState } from "./routing-state.ts";

/** generate_log_buckets defaults (2 significant figures, 0 first), as Dynamo's fe.log sample shows. */
export const DYNAMO_BUCKETS = {
  requestDurationS: [0, 2, 4, 8, 16, 32, 64, 130, 260, 510],
  inputTokens: [0, 100, 210, 430, 870, 1800, 3600, 7400, 15000, 31000, 63000, 130000],
  outputTokens: [0, 100, 210, 430, 880, 1800, 3700, 7600, 16000, 32000],
  ttftS: [0, 0.0022, 0.0047, 0.01, 0.022, 0.047, 0.1, 0.22, 0.47, 1, 2.2, 4.7, 10, 22, 48, 100, 220, 480],
  itlS: [0, 0.0019, 0.0035, 0.0067, 0.013, 0.024, 0.045, 0.084, 0.16, 0.3, 0.56, 1.1, 2],
} as const;

/** The KV router's overhead histograms (ms): exponential(0.01, ×3, 17). */
export const ROUTER_OVERHEAD_BUCKETS_MS = Array.from({ length: 17 }, (_, i) => Number((0.01 * 3 ** i).toPrecision(6)));

export type DynamoEndpoint = "completions" | "chat_completions";

/** Dynamo's error_type values that the frontend can produce. */
export type ErrorType = "validation" | "not_found" | "overload" | "unavailable" | "cancelled" | "response_timeout" | "internal" | "backend_error" | "truncated_stream";

/** An HTTP status the frontend answered as Dynamo's error_type. */
export function errorTypeOf(status: number): ErrorType {
  if (status === 404) return "not_found";
  if (status === 499) return "cancelled";
  if (status === 503) return "unavailable";
  if (status === 504) return "response_timeout";
  if (status === 502) return "backend_error";
  if (status === 529 || status === 429) return "overload";
  if (status >= 400 && status < 500) return "validation";
  return "internal";
}

/** One request from parse to its end: what Dynamo's InflightGuard and ResponseMetricCollector see. */
export interface RequestTrack {
  /** `n` output tokens reached the client now (one worker read): TTFT on the first, ITL after. */
  tokens(n: number, promptTokens: number): void;
  /** The request ended: success, or an error of this type (idempotent); cached prompt tokens when the worker reported them. */
  end(error?: ErrorType, cachedTokens?: number): void;
}

class Counts {
  private readonly m = new Map<string, { labels: Record<string, string>; n: number }>();
  add(labels: Record<string, string>, by = 1): void {
    this.cell(labels).n += by;
  }
  /** The series of `labels` (made at 0), to count on without looking it up again. */
  cell(labels: Record<string, string>): { n: number } {
    const key = Object.values(labels).join("\u0000");
    let e = this.m.get(key);
    if (!e) this.m.set(key, (e = { labels, n: 0 }));
    return e;
  }
  samples(): MetricFamily["samples"] {
    return [...this.m.values()].map(({ labels, n }) => ({ labels, value: n }));
  }
}

/**
 * The series one (model, endpoint, request type) counts on, each made at its first use (as a
 * Prometheus client makes a labelled series: one never counted on is not shown) and then kept.
 */
class RequestSeries {
  private readonly m: { model: string };
  private cells: Partial<Record<"started" | "succeeded" | "active" | "queued" | "outputTokens", { n: number }>> = {};
  private hists: Partial<Record<"ttft" | "isl" | "itl" | "duration" | "osl" | "cached", HistogramSeries>> = {};

  constructor(
    private readonly counts: Record<"started" | "requests" | "active" | "queued" | "outputTokens", Counts>,
    private readonly histograms: Record<"ttft" | "isl" | "itl" | "duration" | "osl" | "cached", HistogramVec>,
    private readonly model: string,
    private readonly endpoint: DynamoEndpoint,
    private readonly requestType: string,
  ) {
    this.m = { model };
  }

  cell(which: "started" | "succeeded" | "active" | "queued" | "outputTokens"): { n: number } {
    let c = this.cells[which];
    if (c === undefined) {
      const { model, endpoint, requestType } = this;
      if (which === "started") c = this.counts.started.cell({ endpoint, model, request_type: requestType });
      else if (which === "succeeded") c = this.counts.requests.cell({ endpoint, error_type: "", model, request_type: requestType, status: "success" });
      else c = this.counts[which].cell(this.m);
      this.cells[which] = c;
    }
    return c;
  }

  histogram(which: "ttft" | "isl" | "itl" | "duration" | "osl" | "cached"): HistogramSeries {
    return (this.hists[which] ??= this.histograms[which].with(this.m));
  }
}

export class DynamoFrontendMetrics {
  private readonly requests = new Counts();
  private readonly started = new Counts();
  private readonly active = new Counts();
  private readonly queued = new Counts();
  private readonly outputTokens = new Counts();
  private readonly cancellations = new Counts();
  private readonly rejections = new Counts();
  readonly migrations = new Counts();
  readonly seqLenExceeded = new Counts();
  private disconnected = 0;
  private readonly duration = new HistogramVec("dynamo_frontend_request_duration_seconds", "Duration of LLM requests", DYNAMO_BUCKETS.requestDurationS, "rust");
  private readonly isl = new HistogramVec("dynamo_frontend_input_sequence_tokens", "Input sequence length in tokens", DYNAMO_BUCKETS.inputTokens, "rust");
  private readonly osl = new HistogramVec("dynamo_frontend_output_sequence_tokens", "Output sequence length in tokens", DYNAMO_BUCKETS.outputTokens, "rust");
  private readonly ttft = new HistogramVec("dynamo_frontend_time_to_first_token_seconds", "Time to first token in seconds", DYNAMO_BUCKETS.ttftS, "rust");
  private readonly cached = new HistogramVec("dynamo_frontend_cached_tokens", "Number of cached tokens (prefix cache hits) per request", DYNAMO_BUCKETS.inputTokens, "rust");
  private readonly itl = new HistogramVec("dynamo_frontend_inter_token_latency_seconds", "Inter-token latency in seconds", DYNAMO_BUCKETS.itlS, "rust");
  private readonly routerTotal = new HistogramVec("dynamo_router_overhead_total_ms", "Total KV router overhead per routing decision in milliseconds", ROUTER_OVERHEAD_BUCKETS_MS, "rust");

  constructor(
    /** Monotonic ms. */
    private readonly now: () => number,
    /** Dynamo's router_id const label: one per frontend process. */
    private readonly routerId = "0",
    private readonly migrationLimit = 0,
  ) {}

  /** The series of one (model, endpoint, request type): looked up once per request, not once per metric. */
  private seriesOf(model: string, endpoint: DynamoEndpoint, requestType: string): RequestSeries {
    const key = `${model}\u0000${endpoint}\u0000${requestType}`;
    let s = this.seriesByKey.get(key);
    if (s === undefined) {
      const counts = { started: this.started, requests: this.requests, active: this.active, queued: this.queued, outputTokens: this.outputTokens };
      const histograms = { ttft: this.ttft, isl: this.isl, itl: this.itl, duration: this.duration, osl: this.osl, cached: this.cached };
      this.seriesByKey.set(key, (s = new RequestSeries(counts, histograms, model, endpoint, requestType)));
    }
    return s;
  }

  private readonly seriesByKey = new Map<string, RequestSeries>();

  /** A generate request was parsed: counted as started, active and queued until its first token. */
  begin(model: string, endpoint: DynamoEndpoint, stream: boolean): RequestTrack {
    const requestType = stream ? "stream" : "unary";
    const t0 = this.now();
    const s = this.seriesOf(model, endpoint, requestType);
    s.cell("started").n++;
    s.cell("active").n++;
    s.cell("queued").n++;
    let queued = true;
    let ended = false;
    let osl = 0;
    let lastMs = -1;
    const leaveQueue = () => {
      if (queued) s.cell("queued").n--;
      queued = false;
    };
    return {
      tokens: (n, promptTokens) => {
        if (n <= 0 || ended) return;
        const at = this.now();
        s.cell("outputTokens").n += n;
        if (lastMs < 0) {
          // As Dynamo: several tokens in the first response all count as TTFT, no ITL.
          leaveQueue();
          s.histogram("ttft").observe((at - t0) / 1000);
          s.histogram("isl").observe(promptTokens);
        } else s.histogram("itl").observe((at - lastMs) / 1000 / n, n);
        lastMs = at;
        osl += n;
      },
      end: (error, cachedTokens) => {
        if (ended) return;
        ended = true;
        leaveQueue();
        s.cell("active").n--;
        s.histogram("duration").observe((this.now() - t0) / 1000);
        if (lastMs >= 0 || error === undefined) s.histogram("osl").observe(osl);
        if (cachedTokens !== undefined) s.histogram("cached").observe(cachedTokens);
        if (error === undefined) s.cell("succeeded").n++;
        else this.requests.add({ endpoint, error_type: error, model, request_type: requestType, status: "error" });
        if (error === "cancelled") {
          this.disconnected++;
          this.cancellations.add({ endpoint, model, request_type: requestType });
        } else if (error === "overload") this.rejections.add({ endpoint, model });
      },
    };
  }

  /** A routing decision's time (hash the prompt, query the index, price every candidate). */
  routed(decisionMs: number): void {
    this.routerTotal.with({ router_id: this.routerId }).observe(decisionMs);
  }

  families(state: RoutingState): MetricFamily[] {
    const gauge = (name: string, help: string, samples: MetricFamily["samples"]): MetricFamily => ({ name, help, type: "gauge", samples });
    const counter = (name: string, help: string, samples: MetricFamily["samples"]): MetricFamily => ({ name, help, type: "counter", samples });
    const active = this.active.samples();
    const decodeBlocks: MetricFamily["samples"] = [];
    const prefillTokens: MetricFamily["samples"] = [];
    const perModel = new Map<string, { blocks: number; batched: number; context: number; blockSize: number }>();
    for (const w of state.workerList()) {
      const r = w.record;
      const router = state.routerOf(r.model);
      w.rankIds.forEach((s, rank) => {
        // Aggregated workers are Dynamo's "decode" worker type.
        const labels = { dp_rank: String(rank), worker_id: w.id, worker_type: "decode" };
        decodeBlocks.push({ labels, value: router?.activeBlocksOf(s) ?? 0 });
        prefillTokens.push({ labels, value: router?.activePrefillTokensOf(s) ?? 0 });
      });
      const p = perModel.get(r.model) ?? { blocks: 0, batched: 0, context: 0, blockSize: r.block_size };
      p.blocks = Math.max(p.blocks, r.total_gpu_blocks);
      p.batched = Math.max(p.batched, r.max_num_batched_tokens ?? 0);
      p.context = Math.max(p.context, r.max_model_len ?? 0);
      perModel.set(r.model, p);
    }
    const modelGauge = (name: string, help: string, pick: (p: { blocks: number; batched: number; context: number; blockSize: number }) => number) =>
      gauge(name, help, [...perModel].map(([model, p]) => ({ labels: { model }, value: pick(p) })));
    return [
      counter("dynamo_frontend_requests_total", "Total number of LLM requests processed", this.requests.samples()),
      counter("dynamo_frontend_requests_started_total", "Total number of LLM requests started", this.started.samples()),
      gauge("dynamo_frontend_active_requests", "Number of active requests", active),
      gauge("dynamo_frontend_inflight_requests", "Number of inflight requests (deprecated: use dynamo_frontend_active_requests)", active),
      gauge("dynamo_frontend_queued_requests", "Number of requests in HTTP processing queue", this.queued.samples()),
      gauge("dynamo_frontend_disconnected_clients", "Number of disconnected clients", [{ value: this.disconnected }]),
      counter("dynamo_frontend_output_tokens_total", "Total number of output tokens generated (updated in real-time)", this.outputTokens.samples()),
      this.duration.family(),
      this.isl.family(),
      this.osl.family(),
      this.cached.family(),
      this.ttft.family(),
      this.itl.family(),
      counter("dynamo_frontend_model_cancellation_total", "Total number of requests cancelled by the client", this.cancellations.samples()),
      counter("dynamo_frontend_model_rejection_total", "Total number of requests rejected because every worker was busy", this.rejections.samples()),
      counter("dynamo_frontend_model_migration_total", "Total number of request migrations due to worker unavailability", this.migrations.samples()),
      counter("dynamo_frontend_model_migration_max_seq_len_exceeded_total", "Requests that stopped being tracked for migration past --migration-max-seq-len", this.seqLenExceeded.samples()),
      modelGauge("dynamo_frontend_model_total_kv_blocks", "Total KV cache blocks available for a worker serving the model", (p) => p.blocks),
      modelGauge("dynamo_frontend_model_max_num_batched_tokens", "Maximum number of batched tokens for a worker serving the model", (p) => p.batched),
      modelGauge("dynamo_frontend_model_context_length", "Maximum context length in tokens for a worker serving the model", (p) => p.context),
      modelGauge("dynamo_frontend_model_kv_cache_block_size", "KV cache block size in tokens for a worker serving the model", (p) => p.blockSize),
      modelGauge("dynamo_frontend_model_migration_limit", "Maximum number of request migrations allowed for the model", () => this.migrationLimit),
      gauge("dynamo_frontend_worker_active_decode_blocks", "Active KV cache decode blocks per worker", decodeBlocks),
      gauge("dynamo_frontend_worker_active_prefill_tokens", "Active prefill tokens queued per worker", prefillTokens),
      this.routerTotal.family(),
    ];
  }
}

