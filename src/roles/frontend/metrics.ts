// The frontend's /metrics: requests by route and status, TTFT / end-to-end latency / routing
// decision time as Prometheus histograms, per-(worker, rank) load as the router counts it (active
// blocks, outstanding prefill tokens, busy), requests shed, index size per tier, and the event
// feeds' counters.
import type { MetricFamily } from "../../protocol/prometheus.ts";
import type { RoutingState } from "./routing-state.ts";

export class Histogram {
  private readonly counts: Float64Array;
  private sum = 0;
  private count = 0;

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly bounds: readonly number[],
  ) {
    this.counts = new Float64Array(bounds.length);
  }

  observe(v: number): void {
    this.sum += v;
    this.count++;
    const b = this.bounds;
    for (let i = 0; i < b.length; i++) {
      if (v <= b[i]!) {
        this.counts[i]!++;
        return;
      }
    }
  }

  family(): MetricFamily {
    const samples: MetricFamily["samples"] = [];
    let cumulative = 0;
    this.bounds.forEach((le, i) => {
      cumulative += this.counts[i]!;
      samples.push({ suffix: "_bucket", labels: { le }, value: cumulative });
    });
    samples.push({ suffix: "_bucket", labels: { le: "+Inf" }, value: this.count });
    samples.push({ suffix: "_sum", value: this.sum }, { suffix: "_count", value: this.count });
    return { name: this.name, help: this.help, type: "histogram", samples };
  }
}

const LATENCY_S = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
const DECISION_S = [0.000005, 0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.005];

export class FrontendMetrics {
  readonly ttft = new Histogram("kvcr_frontend_time_to_first_token_seconds", "Time from request arrival to the first generated token", LATENCY_S);
  readonly latency = new Histogram("kvcr_frontend_request_duration_seconds", "Time from request arrival to the last byte of the response", LATENCY_S);
  readonly decision = new Histogram("kvcr_frontend_routing_decision_seconds", "Time to hash the prompt and pick a (worker, rank)", DECISION_S);
  /** Count per route, then per status: no key string built on every request. */
  private readonly requests = new Map<string, Map<number, number>>();
  hintsAttached = 0;
  /** Attempts sent again to another worker after one never reached its worker (--router-retries). */
  retries = 0;
  /** Per model, then per migration type (Dynamo's new_request / ongoing_request). */
  private readonly migrations = new Map<string, { new_request: number; ongoing_request: number }>();
  private readonly seqLenExceeded = new Map<string, number>();

  migration(model: string, type: "new_request" | "ongoing_request"): void {
    let m = this.migrations.get(model);
    if (!m) this.migrations.set(model, (m = { new_request: 0, ongoing_request: 0 }));
    m[type]++;
  }

  migrationMaxSeqLenExceeded(model: string): void {
    this.seqLenExceeded.set(model, (this.seqLenExceeded.get(model) ?? 0) + 1);
  }

  /** Retries, ejections and migrations (Dynamo's names for migrations, with our prefix). */
  private failureFamilies(state: RoutingState): MetricFamily[] {
    const migrations: MetricFamily = { name: "kvcr_frontend_model_migration_total", help: "Requests resumed on another worker after theirs failed, by model and migration_type (new_request: before the worker answered; ongoing_request: mid-stream)", type: "counter", samples: [] };
    for (const [model, m] of this.migrations) for (const type of ["new_request", "ongoing_request"] as const) migrations.samples.push({ labels: { model, migration_type: type }, value: m[type] });
    const exceeded: MetricFamily = { name: "kvcr_frontend_model_migration_max_seq_len_exceeded_total", help: "Requests that stopped being tracked for migration past --migration-max-seq-len", type: "counter", samples: [] };
    for (const [model, n] of this.seqLenExceeded) exceeded.samples.push({ labels: { model }, value: n });
    const h = state.health;
    return [
      { name: "kvcr_frontend_retries_total", help: "Requests sent again to the next-best worker after their worker could not be reached or answered 503 (--router-retries)", type: "counter", samples: [{ value: this.retries }] },
      {
        name: "kvcr_frontend_worker_ejections_total",
        help: "Workers taken out of routing: reason failures (--worker-eject-after in a row) or down (connection failed, shutdown, cut stream)",
        type: "counter",
        samples: (["failures", "down"] as const).map((reason) => ({ labels: { reason }, value: h.ejections[reason] })),
      },
      { name: "kvcr_frontend_ejected_workers", help: "Workers out of routing now, waiting for their /health to answer", type: "gauge", samples: [{ value: h.ejectedCount }] },
      migrations,
      exceeded,
    ];
  }

  request(route: string, status: number): void {
    let byStatus = this.requests.get(route);
    if (!byStatus) this.requests.set(route, (byStatus = new Map()));
    byStatus.set(status, (byStatus.get(status) ?? 0) + 1);
  }

  families(state: RoutingState, feeds: () => MetricFamily[]): MetricFamily[] {
    const requests: MetricFamily = { name: "kvcr_frontend_requests_total", help: "HTTP requests by route and status", type: "counter", samples: [] };
    for (const [route, byStatus] of this.requests) for (const [status, value] of byStatus) requests.samples.push({ labels: { route, status }, value });
    const gauge = (name: string, help: string): MetricFamily => ({ name, help, type: "gauge", samples: [] });
    const active = gauge("kvcr_frontend_worker_active_blocks", "Distinct prompt blocks of the requests routed to the (worker, rank) and not yet finished");
    const prefill = gauge("kvcr_frontend_worker_active_prefill_tokens", "Prompt tokens routed to the (worker, rank) that await their first token (less the cached overlap seen at routing)");
    const busy = gauge("kvcr_frontend_worker_busy", "1 while the (worker, rank) is over a busy threshold");
    const rejected: MetricFamily = { name: "kvcr_frontend_rejected_requests_total", help: "Requests shed because every worker was busy", type: "counter", samples: [] };
    for (const w of state.workerList()) {
      const router = state.routerOf(w.record.model);
      w.rankIds.forEach((s, r) => {
        const labels = { worker: w.id, dp_rank: r };
        active.samples.push({ labels, value: router?.activeBlocksOf(s) ?? 0 });
        prefill.samples.push({ labels, value: router?.activePrefillTokensOf(s) ?? 0 });
        busy.samples.push({ labels, value: router?.isBusy(s) ? 1 : 0 });
      });
    }
    for (const model of state.modelNames()) rejected.samples.push({ labels: { model }, value: state.routerOf(model)!.rejected });
    return [
      requests,
      this.ttft.family(),
      this.latency.family(),
      this.decision.family(),
      { name: "kvcr_frontend_workers", help: "Workers in routing", type: "gauge", samples: [{ value: state.workerCount }] },
      { name: "kvcr_frontend_queued_requests", help: "Requests held while every worker is saturated (--router-queue-threshold)", type: "gauge", samples: [{ value: state.heldCount }] },
      active,
      prefill,
      busy,
      rejected,
      {
        name: "kvcr_frontend_index_blocks",
        help: "Blocks in the router's index per tier, summed over (worker, rank)s",
        type: "gauge",
        samples: (["device", "host", "disk"] as const).map((tier) => ({ labels: { tier }, value: state.index.size(tier) })),
      },
      { name: "kvcr_frontend_router_hints_total", help: "Requests sent with a kv_hint (a router hint naming a source with a longer prefix)", type: "counter", samples: [{ value: this.hintsAttached }] },
      { name: "kvcr_frontend_unmapped_events_total", help: "Router events whose source maps to no known (worker, rank): dropped", type: "counter", samples: [{ value: state.unmappedEvents }] },
      { name: "kvcr_frontend_orphan_stores_total", help: "Stored events dropped by the index: the (worker, rank) holds no block they chain from", type: "counter", samples: [{ value: state.index.orphanStores }] },
      ...this.failureFamilies(state),
      ...feeds(),
    ];
  }
}
