// The discovery connection as every role shows it: a `discovery` object in /health's body and
// kvcr_discovery_* families on /metrics. `degraded` is what makes a role's /health say "degraded".
import type { MetricFamily } from "../protocol/prometheus.ts";
import { discoveryStatus, type DiscoveryStore, type MemberView } from "./store.ts";

/** The /health view of the discovery store. */
export interface DiscoveryHealth {
  backend: string;
  /** False while the store is unreachable or the etcd member in use does not answer. */
  connected: boolean;
  /** etcd: the member in use. */
  endpoint?: string;
  /** While not connected: why. */
  lastError?: string;
  /** Discovery may be missing changes: not connected, an etcd member silent, or quorum lost. */
  degraded: boolean;
  degradedReason?: string;
  /** etcd: whether the cluster has quorum (absent until every member was probed). */
  quorum?: boolean;
  /** etcd: every member, answering or not. */
  members?: MemberView[];
}

export function discoveryHealth(store: DiscoveryStore): DiscoveryHealth {
  const s = discoveryStatus(store);
  // The members' account when there is one (it names a silent member in use too), else the outage's.
  const reason = s.degradedReason ?? (!s.connected ? (s.lastError ?? "discovery store unreachable") : undefined);
  return {
    backend: s.backend,
    connected: s.connected,
    ...(s.endpoint ? { endpoint: s.endpoint } : {}),
    ...(!s.connected && s.lastError ? { lastError: s.lastError } : {}),
    degraded: reason !== undefined,
    ...(reason !== undefined ? { degradedReason: reason } : {}),
    ...(s.quorum !== undefined ? { quorum: s.quorum } : {}),
    ...(s.members ? { members: s.members } : {}),
  };
}

export function discoveryMetricFamilies(store: DiscoveryStore): MetricFamily[] {
  const s = discoveryStatus(store);
  const labels = { backend: s.backend };
  return [
    { name: "kvcr_discovery_connected", help: "1 while the discovery store answers (etcd: the member in use answers its probe), 0 otherwise (records and watches carry on)", type: "gauge", samples: [{ labels, value: s.connected ? 1 : 0 }] },
    { name: "kvcr_discovery_degraded", help: "1 while discovery may be missing changes: store unreachable, an etcd member not answering, or etcd quorum lost", type: "gauge", samples: [{ labels, value: discoveryHealth(store).degraded ? 1 : 0 }] },
    { name: "kvcr_discovery_reconnects_total", help: "Returns of the discovery store from unreachable to reachable", type: "counter", samples: [{ labels, value: s.reconnects }] },
    { name: "kvcr_discovery_lease_regrants_total", help: "Leases granted again after the store lost them (lapsed during an outage or stall, etcd wiped, discovery directory replaced); records re-put", type: "counter", samples: [{ labels, value: s.leaseRegrants }] },
    { name: "kvcr_discovery_watch_resyncs_total", help: "Watches listed again because the store lost their history (etcd compacted, went back or replaced, discovery directory replaced)", type: "counter", samples: [{ labels, value: s.watchResyncs }] },
    { name: "kvcr_discovery_member_failovers_total", help: "Times the etcd member in use stopped answering its probe (or lost its leader) and another was used, every watch listed again", type: "counter", samples: [{ labels, value: s.memberFailovers ?? 0 }] },
    { name: "kvcr_discovery_stale_events_ignored_total", help: "Watch events ignored as older than the record held for their key (a late delete or put, as from an etcd member resuming after a hang)", type: "counter", samples: [{ labels, value: s.staleEventsIgnored ?? 0 }] },
    ...(s.members
      ? [
          { name: "kvcr_discovery_member_answering", help: "1 while the etcd member answers its status probe within the deadline, 0 otherwise", type: "gauge" as const, samples: s.members.map((m) => ({ labels: { ...labels, endpoint: m.endpoint }, value: m.answering === false ? 0 : 1 })) },
          { name: "kvcr_discovery_quorum", help: "0 while the etcd members' probes show quorum lost (a member that answers has no leader, or none answers), 1 otherwise", type: "gauge" as const, samples: [{ labels, value: s.quorum === false ? 0 : 1 }] },
        ]
      : []),
  ];
}
