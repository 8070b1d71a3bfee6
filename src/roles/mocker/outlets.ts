// Per worker: the event outlets of its ranks — a raw vLLM-format PUB (+ replay ROUTER) per rank
// when ports are configured, and in direct mode one router-event relay for the worker — with
// their counters as metrics. State-agent mode skips the relay: events are published once.
import type { MockerConfig } from "../../config/mocker.ts";
import type { Logger } from "../../lib/logger.ts";
import type { PortPlan } from "../../transport/port-plan.ts";
import type { MetricFamily, MetricType } from "../../protocol/prometheus.ts";
import type { WorkerIdentity } from "./identity.ts";
import { RankPublisher, type PublishFaults } from "./rank-publisher.ts";
import { tcpEndpoint } from "./records.ts";
import { RouterEventRelay } from "./router-event-relay.ts";
import type { EventOutlet } from "./rank-engine.ts";

export interface WorkerOutlets {
  rawPorts: number[];
  replayPorts: number[] | undefined;
  routerEventsEndpoint: string | undefined;
  forRank(rank: number): EventOutlet[];
  /** Publishers by rank, e.g. to wait for subscribers. */
  publishers: readonly RankPublisher[];
  /** Direct mode: the worker's router-event relay (e.g. to wait for a router's subscription). */
  relay: RouterEventRelay | undefined;
  metrics(): MetricFamily[];
  close(): void;
}

export function openWorkerOutlets(config: MockerConfig, id: WorkerIdentity, logger: Logger, ports?: PortPlan, faultsFor?: (worker: number, rank: number) => PublishFaults): WorkerOutlets {
  const publishers: RankPublisher[] = [];
  let relay: RouterEventRelay | undefined;
  const closeAll = () => {
    for (const p of publishers) p.close();
    relay?.close();
  };
  try {
    if (id.rawPorts) {
      for (let r = 0; r < config.dataParallelSize; r++) {
        publishers.push(
          new RankPublisher({
            host: config.host,
            port: id.rawPorts[r]!,
            replayPort: id.replayPorts?.[r],
            topic: id.rawTopic,
            dataParallelRank: r,
            kvcrOwnsHost: config.kvStateAgent,
            hostMedium: config.hostKvEventsMedium,
            encoding: config.kvEventsEncoding,
            logger,
            label: `worker ${id.index} rank ${r}`,
            ports,
            faults: faultsFor?.(id.index, r),
          }),
        );
      }
    }
    if (!config.kvStateAgent) relay = new RouterEventRelay({ host: config.host, port: 0, workerId: id.workerId, dataParallelSize: config.dataParallelSize, logger, ports });
  } catch (err) {
    closeAll();
    throw err;
  }
  // `worker` is the worker id, as on the vLLM families, the frontend and discovery.
  const labels = (r: number) => ({ worker: id.workerId, dp_rank: r });
  return {
    rawPorts: publishers.map((p) => p.port),
    replayPorts: id.replayPorts ? publishers.map((p) => p.replayPort!) : undefined,
    routerEventsEndpoint: relay ? tcpEndpoint(config.host, relay.port) : undefined,
    publishers,
    relay,
    forRank: (r) => [...(publishers[r] ? [publishers[r]] : []), ...(relay ? [relay.outlet(r)] : [])],
    metrics: () => {
      const stats = publishers.map((p) => p.stats());
      const family = (name: string, help: string, pick: (s: ReturnType<RankPublisher["stats"]>) => number, type: MetricType = "counter"): MetricFamily => ({
        name,
        help,
        type,
        samples: stats.map((s, r) => ({ labels: labels(r), value: pick(s) })),
      });
      const out = [
        family("kvcr_mocker_raw_batches_published_total", "Raw KV-event batches published", (s) => s.batchesPublished),
        family("kvcr_mocker_raw_events_published_total", "KV events published in raw batches", (s) => s.eventsPublished),
        family("kvcr_mocker_raw_batches_dropped_total", "Raw batches dropped at a subscriber's high-water mark", (s) => s.batchesDroppedByHwm),
        family("kvcr_mocker_replay_requests_total", "Replay requests served", (s) => s.replayRequestsServed),
        family("kvcr_mocker_replay_bad_requests_total", "Malformed replay requests ignored", (s) => s.badReplayRequests),
        family("kvcr_mocker_replay_truncated_total", "Replay replies cut short by the ROUTER's queue", (s) => s.truncatedReplays),
        family("kvcr_mocker_raw_encode_errors_total", "Engine steps the vLLM encoder refused (logged; no seq used)", (s) => s.encodeErrors),
        family("kvcr_mocker_raw_batches_faulted_total", "Raw batches the fault API dropped, delayed, duplicated, reordered or corrupted", (s) => s.faultedBatches),
        family("kvcr_mocker_replay_requests_ignored_total", "Replay requests left unanswered by the no_replay fault", (s) => s.ignoredReplayRequests),
        family("kvcr_mocker_raw_subscribers", "Subscribers connected to the raw PUB whose subscription matches its topic", (s) => s.subscribers, "gauge"),
        family("kvcr_mocker_raw_subscribers_dropped_total", "Subscribers dropped for passing a subscription bound (count, prefix length, total bytes)", (s) => s.subscribersOverLimits),
      ];
      if (relay) {
        const s = relay.stats();
        const relayed = (name: string, help: string, value: number): MetricFamily => ({ name, help, type: "counter", samples: [{ labels: { worker: id.workerId }, value }] });
        out.push(
          relayed("kvcr_mocker_router_event_batches_total", "Router-event batches relayed (direct mode)", s.batchesPublished),
          relayed("kvcr_mocker_router_event_batches_dropped_total", "Router-event batches dropped at a subscriber's high-water mark", s.batchesDroppedByHwm),
          relayed("kvcr_mocker_router_event_unknown_removals_total", "Removed blocks never stored through the relay (left out)", s.unknownRemovals),
          relayed("kvcr_mocker_router_event_invalid_total", "Engine events the relay could not encode (logged, skipped)", s.invalidEvents),
          relayed("kvcr_mocker_router_event_subscribers_dropped_total", "Subscribers dropped for passing a subscription bound (count, prefix length, total bytes)", s.subscribersOverLimits),
        );
      }
      return out;
    },
    close: closeAll,
  };
}
