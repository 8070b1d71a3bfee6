// The frontend's /metrics: Dynamo's frontend and router families (dynamo-metrics.ts), then what
// only kvcr-mock has: HTTP requests by route and status, routing decision time, requests routed and
// busy flags per (worker, rank), requests shed, index size per tier, retries, stall probes and
// ejections, and the event feeds' counters.
import type { MetricFamily } from "../../protocol/prometheus.ts";
import { HistogramSeries } from "../../protocol/prometheus-histogram.ts";
import { DynamoFrontendMetrics } from "./dynamo-metrics.ts";
import { PrefillRouterMetrics } from "./disagg/prefill-metrics.ts";
import type { RoutingState } from "./routing-state.ts";
import type { StallProbeCounts } from "./stall-probe.ts";

const DECISION_S = [0.000005, 0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.005];

export class FrontendMetrics {
  readonly dynamo: DynamoFrontendMetrics;
  readonly decision = new HistogramSeries(DECISION_S, "rust");
  /** Count per route, then per status: no key string built on every request. */
  private readonly requests = new Map<string, Map<number, number>>();
  hintsAttached = 0;
  /** Attempts sent again to another worker after one never reached its worker (--router-retries). */
  retries = 0;
  /** /health probes of a worker after a request stalled on it, by outcome (stall-probe.ts). */
  readonly stallProbes: StallProbeCounts = { answered: 0, failed: 0 };
  /** The prefill router's legs, bypasses, aggregated runs and transfer estimate (disaggregated serving). */
  readonly disagg = new PrefillRouterMetrics();
  /** Requests routed per (worker, rank): the routing spread. */
  private readonly routed = new Map<string, { worker: string; rank: number; n: number }>();

  constructor(opts: { now?: () => number; routerId?: string; migrationLimit?: number } = {}) {
    this.dynamo = new DynamoFrontendMetrics(opts.now ?? (() => performance.now()), opts.routerId, opts.migrationLimit);
  }

  /** Dynamo's migration counter (new_request: before the worker answered; ongoing_request: mid-stream). */
  migration(model: string, type: "new_request" | "ongoing_request"): void {
    this.dynamo.migrations.add({ migration_type: type, model });
  }

  migrationMaxSeqLenExceeded(model: string): void {
    this.dynamo.seqLenExceeded.add({ model });
  }

  /** A request was sent to (worker, rank). */
  routedTo(worker: string, rank: number): void {
    const key = `${worker}\u0000${rank}`;
    const e = this.routed.get(key);
    if (e) e.n++;
    else this.routed.set(key, { worker, rank, n: 1 });
  }

  /** Retries, stall probes and ejections (migrations are Dynamo's family). */
  private failureFamilies(state: RoutingState): MetricFamily[] {
    const h = state.health;
    return [
      { name: "kvcr_frontend_retries_total", help: "Requests sent again to the next-best worker after their worker could not be reached or answered 503 (--router-retries)", type: "counter", samples: [{ value: this.retries }] },
      {
        name: "kvcr_frontend_worker_ejections_total",
        help: "Workers taken out of routing: reason failures (--worker-eject-after in a row), down (connection failed, shutdown, cut stream) or stalled (a request stalled and the worker's /health did not answer)",
        type: "counter",
        samples: (["failures", "down", "stalled"] as const).map((reason) => ({ labels: { reason }, value: h.ejections[reason] })),
      },
      {
        name: "kvcr_frontend_stall_probes_total",
        help: "/health probes of a worker after a request stalled on it (--worker-stall-timeout): answered (200 within 1 s: the stall counts toward --worker-eject-after) or failed (the worker leaves routing at once)",
        type: "counter",
        samples: (["answered", "failed"] as const).map((outcome) => ({ labels: { outcome }, value: this.stallProbes[outcome] })),
      },
      { name: "kvcr_frontend_ejected_workers", help: "Workers out of routing now, waiting for their /health to answer", type: "gauge", samples: [{ value: h.ejectedCount }] },
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
    const busy = gauge("kvcr_frontend_worker_busy", "1 while the (worker, rank) is over a busy threshold");
    const rejected: MetricFamily = { name: "kvcr_frontend_rejected_requests_total", help: "Requests shed because every worker was busy", type: "counter", samples: [] };
    for (const w of state.workerList()) {
      const router = state.routerOf(w.record.model);
      w.rankIds.forEach((s, r) => {
        const labels = { worker: w.id, dp_rank: r };
        busy.samples.push({ labels, value: router?.isBusy(s) ? 1 : 0 });
      });
    }
    for (const model of state.modelNames()) rejected.samples.push({ labels: { model }, value: state.routerOf(model)!.rejected });
    const routed: MetricFamily = { name: "kvcr_frontend_routed_requests_total", help: "Requests routed to each (worker, rank) by their first routing decision (retries and migrations not included)", type: "counter", samples: [] };
    for (const { worker, rank, n } of this.routed.values()) routed.samples.push({ labels: { worker, dp_rank: rank }, value: n });
    return [
      ...this.dynamo.families(state),
      requests,
      { name: "kvcr_frontend_routing_decision_seconds", help: "Time to hash the prompt and pick a (worker, rank)", type: "histogram", samples: this.decision.samples({}) },
      routed,
      { name: "kvcr_frontend_workers", help: "Workers in routing", type: "gauge", samples: [{ value: state.workerCount }] },
      { name: "kvcr_frontend_queued_requests", help: "Requests held while every worker is saturated (--router-queue-threshold)", type: "gauge", samples: [{ value: state.heldCount }] },
      busy,
      rejected,
      {
        name: "kvcr_frontend_index_blocks",
        help: "Blocks in the router's index per tier, summed over (worker, rank)s",
        type: "gauge",
        samples: (["device", "host", "disk"] as const).map((tier) => ({ labels: { tier }, value: state.index.size(tier) })),
      },
      { name: "kvcr_frontend_router_hints_total", help: "Requests sent with a kv_hint (a router hint naming a holder with a longer prefix)", type: "counter", samples: [{ value: this.hintsAttached }] },
      { name: "kvcr_frontend_unmapped_events_total", help: "Router events whose holder maps to no known (worker, rank): dropped", type: "counter", samples: [{ value: state.unmappedEvents }] },
      { name: "kvcr_frontend_orphan_stores_total", help: "Stored events dropped by the index: the (worker, rank) holds no block they chain from", type: "counter", samples: [{ value: state.index.orphanStores }] },
      ...this.failureFamilies(state),
      ...this.disagg.families(),
      ...feeds(),
    ];
  }
}
