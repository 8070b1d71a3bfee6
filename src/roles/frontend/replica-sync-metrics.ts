// Router replica sync's counters and their /metrics families: events sent, received and applied,
// dropped (and why), lost batches, stale frees, replicas expired, and the sync lag (a batch's
// arrival minus its sender's send time, both wall clocks).
import type { BatchOutcome } from "../../core/routing/replica-ledger.ts";
import { HistogramSeries } from "../../protocol/prometheus-histogram.ts";
import type { MetricFamily } from "../../protocol/prometheus.ts";

const LAG_S = [0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5];
const DROP_REASONS = ["nats_unreachable", "too_large"] as const;
type DropReason = (typeof DROP_REASONS)[number];

export class ReplicaSyncCounts {
  eventsSent = 0;
  batchesSent = 0;
  eventsReceived = 0;
  eventsApplied = 0;
  eventsIgnored = 0;
  batchesLost = 0;
  staleFreed = 0;
  malformed = 0;
  readonly lag = new HistogramSeries(LAG_S, "rust");
  private readonly drops: Record<DropReason, number> = { nats_unreachable: 0, too_large: 0 };

  sent(events: number): void {
    this.eventsSent += events;
    this.batchesSent++;
  }

  dropped(reason: DropReason, events: number): void {
    this.drops[reason] += events;
  }

  received(events: number, out: BatchOutcome, lagS: number): void {
    this.eventsReceived += events;
    this.eventsApplied += out.applied;
    this.eventsIgnored += out.ignored;
    this.batchesLost += out.lost;
    this.staleFreed += out.staleFreed;
    this.lag.observe(lagS);
  }

  families(live: { connected: boolean; replicas: number; remoteRequests: number; expiredReplicas: number; expiredRequests: number }): MetricFamily[] {
    const p = "kvcr_frontend_router_replica_sync";
    const counter = (name: string, help: string, value: number): MetricFamily => ({ name: `${p}_${name}`, help, type: "counter", samples: [{ value }] });
    const gauge = (name: string, help: string, value: number): MetricFamily => ({ name: `${p}_${name}`, help, type: "gauge", samples: [{ value }] });
    return [
      counter("events_sent_total", "Active-request events (add, prefill_completed, free) this replica published", this.eventsSent),
      counter("batches_sent_total", "Batches this replica published (heartbeats included)", this.batchesSent),
      {
        name: `${p}_events_dropped_total`,
        help: "Events not published: nats_unreachable (no NATS connection) or too_large (over the server's max_payload)",
        type: "counter",
        samples: DROP_REASONS.map((reason) => ({ labels: { reason }, value: this.drops[reason] })),
      },
      counter("events_received_total", "Events received from the other replicas", this.eventsReceived),
      counter("events_applied_total", "Received events that changed this router's load", this.eventsApplied),
      counter("events_ignored_total", "Received events that changed nothing: unknown worker, unknown or already freed request", this.eventsIgnored),
      counter("batches_lost_total", "Batches of other replicas that never arrived (gaps in their batch_seq)", this.batchesLost),
      counter("stale_frees_total", "Remote requests freed because their replica's heartbeat no longer listed them (a lost free)", this.staleFreed),
      counter("malformed_batches_total", "Messages on the subject that did not decode as a batch", this.malformed),
      counter("replicas_expired_total", "Replicas silent past --router-replica-timeout", live.expiredReplicas),
      counter("expired_requests_total", "Remote requests freed because their replica went silent", live.expiredRequests),
      gauge("nats_connected", "1 while this replica is connected to NATS", live.connected ? 1 : 0),
      gauge("replicas", "Other replicas heard from within --router-replica-timeout", live.replicas),
      gauge("remote_requests", "Other replicas' active requests counted in this router's load", live.remoteRequests),
      { name: `${p}_lag_seconds`, help: "Sync lag: a batch's arrival here minus its sender's send time (wall clocks)", type: "histogram", samples: this.lag.samples({}) },
    ];
  }
}
