// The mocker's discovery records over their lifetime: refuse CacheOwner ordinals another live process
// publishes, then register every worker (its record, then its intents) while HeldRecords keeps each
// record put so closing withdraws them all, newest first, including one put while it closes.
import type { MockerConfig } from "../../config/mocker.ts";
import { keys } from "../../discovery/keys.ts";
import type { DiscoveryStore, LeasedRecord } from "../../discovery/store.ts";
import type { Logger } from "../../lib/logger.ts";
import { recordOwnerAlive } from "../../lib/process-alive.ts";
import { kvStateEndpoint, type WorkerIdentity } from "./identity.ts";
import { advertisedHost, attachmentIntents, tcpEndpoint, workerRecord, type WorkerEndpoints } from "./records.ts";
import { registerWorkers } from "./registration.ts";
import { refuseOrdinalOverlap } from "./ordinal-clash.ts";
import { workerDomain, type Topology } from "./topology.ts";

/** Records this process put, withdrawn in reverse on close; one put after close is withdrawn at once. */
export class HeldRecords implements AsyncDisposable {
  private readonly held: LeasedRecord[] = [];
  private closed = false;

  constructor(private readonly logger: Logger) {}

  /** A held record by key (a worker record to update). */
  find(key: string): LeasedRecord | undefined {
    return this.held.find((r) => r.key === key);
  }

  /** Takes a record just put; false once closed (it was withdrawn here). */
  async keep(record: LeasedRecord): Promise<boolean> {
    if (!this.closed) {
      this.held.push(record);
      return true;
    }
    await this.withdraw(record);
    return false;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    this.closed = true;
    for (const r of this.held.splice(0).reverse()) await this.withdraw(r);
  }

  private withdraw(record: LeasedRecord): Promise<void> {
    return record.withdraw().catch((err: unknown) => this.logger.warn(`withdrawing ${record.key}: ${String(err)}`));
  }
}

export interface MockerRecordsPlan {
  config: MockerConfig;
  store: DiscoveryStore;
  workers: readonly WorkerIdentity[];
  endpoints: readonly WorkerEndpoints[];
  httpUrl: string;
  topology: Topology;
  /** Stamped on every intent: a restarted worker is a new incarnation. */
  incarnation: number;
  records: HeldRecords;
  logger: Logger;
  /** A worker's records are all in discovery. */
  registered(worker: WorkerIdentity): void;
  /** True once the mocker is closing: no new worker starts registering. */
  closing(): boolean;
  /** The LoRA adapters a worker holds now (its record lists them). */
  loraAdapters?(worker: number): string[];
}

function workerRecordOf(plan: MockerRecordsPlan, id: WorkerIdentity) {
  const domain = workerDomain(plan.topology, id.index, plan.config.kvTransferIslandSize);
  return workerRecord(plan.config, id, plan.endpoints[id.index]!, { httpUrl: plan.httpUrl, topology: plan.topology, domain, loraAdapters: plan.loraAdapters?.(id.index) });
}

/** Rewrites a registered worker's record (its LoRA adapters changed); a worker not yet registered is put with them. */
export async function updateWorkerRecord(plan: MockerRecordsPlan, id: WorkerIdentity): Promise<void> {
  await plan.records.find(keys.worker(plan.config.namespace, id.workerId))?.update(workerRecordOf(plan, id));
}

/** Resolves once every worker is registered (or closing stopped it); rejects on an overlap or a failed put. */
export async function publishMockerRecords(plan: MockerRecordsPlan): Promise<void> {
  const { config, store, workers, endpoints, logger } = plan;
  // Before anything is published: another live mocker's ordinal in our range refuses the start.
  const rawHost = advertisedHost(config);
  const owners = workers.flatMap((id) => id.cacheOwnerIds.map((owner, r) => [owner, tcpEndpoint(rawHost, endpoints[id.index]!.rawPorts[r]!)] as const));
  const firstOrdinal = config.kvStateAgentCacheSlot ?? 0;
  await refuseOrdinalOverlap(store, {
    namespace: config.namespace,
    owners: new Map(owners),
    describe: `pid ${process.pid}, ordinals ${firstOrdinal}–${firstOrdinal + owners.length - 1}, raw host ${rawHost}`,
    selfInstanceId: store.owner?.instanceId,
    ownerAlive: (owner) => recordOwnerAlive(config.discoveryBackend, owner),
  });
  const intentContext = { incarnation: plan.incarnation, kvStateEndpoint: kvStateEndpoint(config), httpUrl: plan.httpUrl };
  await registerWorkers({
    store,
    workers,
    staggerDelayS: config.staggerDelay,
    recordsOf: (id) => {
      const ep = endpoints[id.index]!;
      return [
        { key: keys.worker(config.namespace, id.workerId), value: workerRecordOf(plan, id) },
        ...attachmentIntents(config, id, ep, intentContext).map((intent) => ({ key: keys.intent(config.namespace, intent.cache_owner_id, id.workerId), value: intent })),
      ];
    },
    keep: (record) => plan.records.keep(record),
    registered: (id) => {
      if (config.kvStateAgent) logger.debug(`worker ${id.index}: raw topic ${id.rawTopic}, cache owners ${id.cacheOwnerIds.join(", ")}`);
      plan.registered(id);
    },
    closing: plan.closing,
  });
  if (!plan.closing()) logger.info(`all ${workers.length} worker(s) registered`);
}
