// KV-transfer islands: topology labels from DYN_TOPOLOGY_* and the transfer domain from
// DYN_KV_TRANSFER_DOMAIN, read once per process; --kv-transfer-island-size N splits workers into
// domains `{domain}-{floor(i / N)}`. Routers only propose hint holders inside one domain.

export interface Topology {
  /** DYN_TOPOLOGY_RACK=r1 → { rack: "r1" }. */
  labels: Record<string, string>;
  /** DYN_KV_TRANSFER_DOMAIN, if set. */
  domain: string | undefined;
}

export function readTopology(env: Readonly<Record<string, string | undefined>>): Topology {
  const labels: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    if (name.startsWith("DYN_TOPOLOGY_") && value !== undefined && value !== "") labels[name.slice("DYN_TOPOLOGY_".length).toLowerCase()] = value;
  }
  const domain = env.DYN_KV_TRANSFER_DOMAIN || undefined;
  return { labels, domain };
}

/**
 * The domain worker `index` advertises. Without an island size every worker shares the process's
 * domain; with one and no DYN_KV_TRANSFER_DOMAIN the base is "default" so islands still separate.
 */
export function workerDomain(topology: Topology, index: number, islandSize: number | undefined): string | undefined {
  if (islandSize === undefined) return topology.domain;
  return `${topology.domain ?? "default"}-${Math.floor(index / islandSize)}`;
}
