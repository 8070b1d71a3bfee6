// The discovery contract every backend implements (file today, etcd later): leased records that
// vanish when their owner stops renewing, prefix list, and list-then-watch. Payloads are generic
// JSON; consumers validate them. Mirrors the etcd model Dynamo uses (lease + keepalive + watch).

/** Which process wrote a record: pid plus a random per-store id (pids get reused). */
export interface RecordOwner {
  pid: number;
  instanceId: string;
  /** The writer's host name (etcd backend, which spans hosts): its pid means something only there. */
  host?: string;
}

/** A live record as readers see it. */
export interface DiscoveryEntry {
  key: string;
  /** Parsed JSON payload, unvalidated: the consumer of each record kind validates it. */
  value: unknown;
  owner: RecordOwner;
  /** Bumped by its owner on every value change (not on lease renewal). */
  revision: number;
  /** Wall-clock ms when the lease lapses unless renewed. */
  leaseExpiresAtMs: number;
}

export const DISCOVERY_EVENT_TYPES = { put: "put", delete: "delete" } as const;
export type DiscoveryEventType = keyof typeof DISCOVERY_EVENT_TYPES;

export const DELETE_REASONS = {
  /** The record is gone (withdrawn by its owner, or deleted by whoever collected it). */
  removed: "removed",
  /** Its lease lapsed: the owner stopped renewing (stopped, crashed or stalled). */
  expired: "expired",
} as const;
export type DeleteReason = keyof typeof DELETE_REASONS;

export type DiscoveryEvent =
  | { type: "put"; entry: DiscoveryEntry }
  | { type: "delete"; key: string; reason: DeleteReason };

export interface PutOptions {
  /** Lease TTL for this record; defaults to the store's. */
  leaseTtlMs?: number;
}

/** A record this process owns. Its lease is renewed automatically until withdraw() / store close. */
export interface LeasedRecord extends AsyncDisposable {
  readonly key: string;
  /** Replaces the payload (bumps the revision; watchers see a put). */
  update(value: unknown): Promise<void>;
  /** Stops renewing and deletes the record now. Idempotent. */
  withdraw(): Promise<void>;
}

export interface DiscoveryWatch extends AsyncDisposable {
  readonly prefix: string;
  /** Stops delivering events and releases timers/watchers. Idempotent. */
  close(): Promise<void>;
}

export type DiscoveryListener = (event: DiscoveryEvent) => void;

export interface DiscoveryStore extends AsyncDisposable {
  readonly backend: string;
  /** Who this store writes records as (both backends have one; test doubles may not). */
  readonly owner?: RecordOwner;
  /** Creates or replaces `key` (last writer wins) under a lease this store keeps renewing. */
  put(key: string, value: unknown, options?: PutOptions): Promise<LeasedRecord>;
  /** Live records whose key starts with `prefix`, sorted by key. Expired ones are left out. */
  list(prefix: string): Promise<DiscoveryEntry[]>;
  /**
   * Delivers a put for every live record under `prefix` (sorted by key) before it resolves,
   * then a put/delete per change. Renewals that change nothing are not events.
   * A listener that throws is logged and does not stop the watch.
   */
  watch(prefix: string, onChange: DiscoveryListener): Promise<DiscoveryWatch>;
  /** Withdraws every record this store owns and closes every watch; no timer outlives it. */
  close(): Promise<void>;
  /**
   * Stops renewing this store's leases until `untilMs` (wall ms; 0 = renew again now), as a stalled
   * process would: its records lapse for readers, and the first renewal after puts them back as
   * after any lapse. The mocker's lease_stop fault.
   */
  holdRenewals?(untilMs: number): void;
  /** Connection to the backing store, for /health and /metrics (read it through discoveryStatus()). */
  status?(): DiscoveryStatus;
}

/** One etcd member as /health shows it. */
export interface MemberView {
  endpoint: string;
  /** null until probed. */
  answering: boolean | null;
  /** Whether it knows a leader (absent while it does not answer). */
  leader?: boolean;
  lastError?: string;
}

/** How a store's connection looks to /health and /metrics. */
export interface DiscoveryStatus {
  backend: string;
  /** False while the backing store is unreachable (records and watches carry on from what is known). */
  connected: boolean;
  /** etcd: the endpoint in use. */
  endpoint?: string;
  lastError?: string;
  /** Returns from disconnected to connected. */
  reconnects: number;
  /**
   * Leases granted again because the store no longer had them (lapsed during an outage or a stall,
   * etcd wiped; the file backend: its lease file or directory lost), records put back.
   */
  leaseRegrants: number;
  /**
   * Watches listed again because the store's history was lost: etcd compacted past it, went back
   * or is another cluster; the file backend's directory replaced.
   */
  watchResyncs: number;
  /** etcd: each `--etcd-endpoints` member as its last status probe showed it. */
  members?: MemberView[];
  /** etcd: whether the cluster has quorum (absent until every member was probed once). */
  quorum?: boolean;
  /** Why discovery may be missing changes although the store answers (silent members, lost quorum). */
  degradedReason?: string;
  /** etcd: times the member in use stopped answering and another was used (every watch listed again). */
  memberFailovers?: number;
  /** etcd: watch events ignored as older than the record held for their key (a late delete or put). */
  staleEventsIgnored?: number;
}

/** A store's status; stores without one (the file backend, test doubles) are always connected. */
export function discoveryStatus(store: DiscoveryStore): DiscoveryStatus {
  return store.status?.() ?? { backend: store.backend, connected: true, reconnects: 0, leaseRegrants: 0, watchResyncs: 0 };
}

/** The slice of the logger discovery needs (a consola instance fits). */
export interface DiscoveryLogger {
  warn(message: string, ...args: unknown[]): void;
  debug(message: string, ...args: unknown[]): void;
}
