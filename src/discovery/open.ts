// Opens the discovery store a role's config names: every role calls this one function,
// so adding a backend changes one place. The config shape is structural (discovery may not import
// config): the resolved discovery options of any role fit it.
import type { Logger } from "../lib/logger.ts";
import { openEtcdDiscoveryStore } from "./etcd-store.ts";
import { openFileDiscoveryStore } from "./file-store.ts";
import type { DiscoveryStore } from "./store.ts";

export interface DiscoverySettings {
  discoveryBackend: "file" | "etcd";
  discoveryDir?: string;
  etcdEndpoints?: string;
  /** Seconds (`--discovery-lease-ttl`, default 10). */
  discoveryLeaseTtl?: number;
  /** Seconds (`--etcd-member-timeout`, default 3). */
  etcdMemberTimeout?: number;
}

export async function openDiscoveryStore(config: DiscoverySettings, logger: Logger): Promise<DiscoveryStore> {
  const leaseTtlMs = config.discoveryLeaseTtl === undefined ? undefined : config.discoveryLeaseTtl * 1000;
  switch (config.discoveryBackend) {
    case "file":
      return openFileDiscoveryStore({ dir: config.discoveryDir, leaseTtlMs, logger });
    case "etcd": {
      const memberTimeoutMs = config.etcdMemberTimeout === undefined ? undefined : config.etcdMemberTimeout * 1000;
      const store = await openEtcdDiscoveryStore({ endpoints: config.etcdEndpoints ?? "", leaseTtlMs, memberTimeoutMs, logger });
      logger.info(`discovery: etcd at ${store.endpoints.join(", ")} (lease ${Math.max(1, Math.ceil((leaseTtlMs ?? 10_000) / 1000))} s)`);
      return store;
    }
  }
}
