// The discovery connection as every role shows it: a `discovery` object in /health's body and
// kvcr_discovery_* families on /metrics.
import type { MetricFamily } from "../protocol/prometheus.ts";
import { discoveryStatus, type DiscoveryStatus, type DiscoveryStore } from "./store.ts";

/** The /health view: backend, connected, endpoint and last error while disconnected. */
export function discoveryHealth(store: DiscoveryStore): Omit<DiscoveryStatus, "reconnects" | "leaseRegrants" | "watchResyncs"> {
  const s = discoveryStatus(store);
  return { backend: s.backend, connected: s.connected, ...(s.endpoint ? { endpoint: s.endpoint } : {}), ...(!s.connected && s.lastError ? { lastError: s.lastError } : {}) };
}

export function discoveryMetricFamilies(store: DiscoveryStore): MetricFamily[] {
  const s = discoveryStatus(store);
  const labels = { backend: s.backend };
  return [
    { name: "kvcr_discovery_connected", help: "1 while the discovery store answers, 0 while it is unreachable (records and watches carry on)", type: "gauge", samples: [{ labels, value: s.connected ? 1 : 0 }] },
    { name: "kvcr_discovery_reconnects_total", help: "Returns of the discovery store from unreachable to reachable", type: "counter", samples: [{ labels, value: s.reconnects }] },
    { name: "kvcr_discovery_lease_regrants_total", help: "Leases granted again after the store lost them (lapsed during an outage or stall, etcd wiped, discovery directory replaced); records re-put", type: "counter", samples: [{ labels, value: s.leaseRegrants }] },
    { name: "kvcr_discovery_watch_resyncs_total", help: "Watches listed again because the store lost their history (etcd compacted, went back or replaced, discovery directory replaced)", type: "counter", samples: [{ labels, value: s.watchResyncs }] },
  ];
}
