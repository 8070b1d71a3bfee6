// The `etcd` discovery backend: records live under `kvcr/{namespace}/{kind}/{id…}` on
// one etcd lease per process (per TTL), kept alive every TTL/3; list is a prefix range read; watch
// is list-then-stream resumed from the last revision. An etcd seen wiped, restored or replaced
// (etcd-epoch.ts) makes every watch list again and every lease put its records again. A member in
// use that stops answering is left for another, every watch listing again (etcd-failover.ts).
// Speaks etcd's JSON gateway over fetch (etcd-client.ts says why), so it works unchanged inside
// the compiled binary.
import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import { ConfigError, KvcrError } from "../lib/errors.ts";
import { createLogger } from "../lib/logger.ts";
import { EtcdClient, parseEndpoints } from "./etcd-client.ts";
import { EtcdLease } from "./etcd-lease.ts";
import { EtcdFailover } from "./etcd-failover.ts";
import { EtcdRecord } from "./etcd-leased-record.ts";
import { ETCD_ROOT, toEntry } from "./etcd-record.ts";
import { EtcdPrefixWatch, rangePrefix } from "./etcd-watch.ts";
import { requireJson } from "./file-record.ts";
import { HeldRecords } from "./held-records.ts";
import { validateKey, validatePrefix } from "./keys.ts";
import type { DiscoveryEntry, DiscoveryListener, DiscoveryLogger, DiscoveryStatus, DiscoveryStore, DiscoveryWatch, LeasedRecord, PutOptions, RecordOwner } from "./store.ts";

export const ETCD_DISCOVERY_DEFAULTS = {
  leaseTtlMs: 10_000,
  /** Per attempt; etcd on a busy machine (fsync behind other I/O) can take seconds to answer. */
  requestTimeoutMs: 5_000,
  watchRetryMs: 250,
  /** A member that leaves a status probe unanswered this long is left for another. */
  memberTimeoutMs: 3_000,
  /** Between status probes of each member. */
  memberProbeIntervalMs: 1_000,
} as const;


export interface EtcdDiscoveryOptions {
  /** `http://HOST:2379` URLs (or one comma-separated string), tried in turn. */
  endpoints: string | readonly string[];
  /** Lease TTL; etcd counts whole seconds, so it is rounded up (minimum 1 s). */
  leaseTtlMs?: number;
  /** Key root; default `kvcr`. */
  root?: string;
  requestTimeoutMs?: number;
  watchRetryMs?: number;
  /** How long a member may leave a status probe unanswered (default 3 s). */
  memberTimeoutMs?: number;
  /** Between status probes (default 1 s, at most the member timeout). */
  memberProbeIntervalMs?: number;
  logger?: DiscoveryLogger;
}

/** Opens the store and checks etcd answers (so a wrong endpoint fails at start-up, by name). */
export async function openEtcdDiscoveryStore(options: EtcdDiscoveryOptions): Promise<EtcdDiscoveryStore> {
  const leaseTtlMs = options.leaseTtlMs ?? ETCD_DISCOVERY_DEFAULTS.leaseTtlMs;
  const problems: string[] = [];
  if (!Number.isFinite(leaseTtlMs) || leaseTtlMs <= 0) problems.push(`discovery leaseTtlMs: ${leaseTtlMs} is invalid; use a positive number of milliseconds`);
  const root = options.root ?? ETCD_ROOT;
  const memberTimeoutMs = options.memberTimeoutMs ?? ETCD_DISCOVERY_DEFAULTS.memberTimeoutMs;
  if (!Number.isFinite(memberTimeoutMs) || memberTimeoutMs <= 0) problems.push(`etcd member timeout: ${memberTimeoutMs} ms is invalid; use a positive number of milliseconds`);
  if (!/^[A-Za-z0-9._-]+$/.test(root)) problems.push(`etcd key root: ${JSON.stringify(root)} is invalid; use letters, digits, '.', '_' or '-'`);
  if (problems.length > 0) throw new ConfigError(problems);
  const endpoints = parseEndpoints(options.endpoints);
  const logger = options.logger ?? createLogger({ tag: "discovery" });
  const store = new EtcdDiscoveryStore(endpoints, {
    leaseTtlS: Math.max(1, Math.ceil(leaseTtlMs / 1000)),
    root,
    requestTimeoutMs: options.requestTimeoutMs ?? ETCD_DISCOVERY_DEFAULTS.requestTimeoutMs,
    watchRetryMs: options.watchRetryMs ?? ETCD_DISCOVERY_DEFAULTS.watchRetryMs,
    memberTimeoutMs,
    memberProbeIntervalMs: Math.min(memberTimeoutMs, options.memberProbeIntervalMs ?? ETCD_DISCOVERY_DEFAULTS.memberProbeIntervalMs),
    logger,
  });
  try {
    await store.client.call("/v3/kv/range", { key: "AA==", limit: 1, count_only: true });
  } catch (err) {
    await store.close();
    throw new KvcrError("DISCOVERY_UNAVAILABLE", `cannot reach etcd for discovery: ${(err as Error).message} (check --etcd-endpoints / ETCD_ENDPOINTS and that etcd runs)`, { cause: err });
  }
  return store;
}

interface ResolvedOptions {
  leaseTtlS: number;
  root: string;
  requestTimeoutMs: number;
  watchRetryMs: number;
  memberTimeoutMs: number;
  memberProbeIntervalMs: number;
  logger: DiscoveryLogger;
}

export class EtcdDiscoveryStore implements DiscoveryStore {
  readonly backend = "etcd";
  readonly owner: RecordOwner = { pid: process.pid, instanceId: randomBytes(8).toString("hex"), host: hostname() };
  readonly client: EtcdClient;
  /** One lease per TTL (in practice one per process: every record uses the store's TTL). */
  private readonly leases = new Map<number, Promise<EtcdLease>>();
  private readonly records = new HeldRecords<EtcdRecord>();
  private readonly watches = new Set<EtcdPrefixWatch>();
  private readonly failover: EtcdFailover;
  private leaseRegrants = 0;
  private watchResyncs = 0;
  private staleEventsIgnored = 0;
  private closed = false;

  constructor(
    readonly endpoints: readonly string[],
    private readonly opts: ResolvedOptions,
  ) {
    this.client = new EtcdClient({
      endpoints,
      requestTimeoutMs: opts.requestTimeoutMs,
      onStatusChange: (s) => {
        if (s.connected) opts.logger.warn(`discovery: etcd reachable again at ${s.endpoint}`);
        else opts.logger.warn(`discovery: ${s.lastError ?? "etcd unreachable"}; serving with what is known and retrying`);
      },
    });
    // Any reply (a list, a put, a keep-alive, a watch) may be the first to show etcd lost its history.
    this.client.epoch.onChange((why) => {
      if (this.closed) return;
      opts.logger.warn(`discovery: ${why}; listing every watch again and putting this process's records back`);
      for (const w of this.watches) w.requestResync(why, true);
      for (const lease of this.leases.values()) void lease.then((l) => l.recheck(), () => {});
    });
    this.failover = new EtcdFailover({
      endpoints,
      client: this.client,
      logger: opts.logger,
      memberTimeoutMs: opts.memberTimeoutMs,
      probeIntervalMs: opts.memberProbeIntervalMs,
      watches: () => this.watches,
      leases: () => this.leases.values(),
    });
  }

  holdRenewals(untilMs: number): void {
    for (const lease of this.leases.values()) void lease.then((l) => void (l.heldUntilMs = untilMs), () => {});
  }

  async put(key: string, value: unknown, options: PutOptions = {}): Promise<LeasedRecord> {
    this.assertOpen();
    validateKey(key);
    requireJson(key, value); // refused before a lease is granted for it
    const ttlMs = options.leaseTtlMs ?? this.opts.leaseTtlS * 1000;
    if (!Number.isFinite(ttlMs) || ttlMs <= 0) throw new KvcrError("DISCOVERY_LEASE_INVALID", `discovery record ${key}: leaseTtlMs ${ttlMs} is invalid; use > 0 ms`);
    // A withdrawal of this key still under way finishes first, or it could delete the new record.
    await this.records.claim(key);
    this.assertOpen();
    const lease = await this.leaseFor(Math.max(1, Math.ceil(ttlMs / 1000)));
    const record = new EtcdRecord(key, value, lease, {
      client: this.client,
      root: this.opts.root,
      owner: this.owner,
      logger: this.opts.logger,
      onWithdrawn: (r) => this.records.release(r),
    });
    return this.records.start(record, `cannot put discovery record ${key} in etcd`);
  }

  async list(prefix: string): Promise<DiscoveryEntry[]> {
    this.assertOpen();
    validatePrefix(prefix);
    const { records } = await rangePrefix({ client: this.client, root: this.opts.root, logger: this.opts.logger }, prefix);
    const live = records.filter((r) => !r.withdrawn);
    // Expiry per lease, asked once per distinct lease (one per owning process).
    const expiry = new Map<string, number>();
    await Promise.all(
      [...new Set(live.map((r) => r.lease))].map(async (id) => {
        const t0 = Date.now();
        const reply = await this.client.call<{ TTL?: string }>("/v3/lease/timetolive", { ID: id }).catch(() => undefined);
        const ttl = Number(reply?.TTL ?? -1);
        if (ttl >= 0) expiry.set(id, t0 + ttl * 1000);
      }),
    );
    const now = Date.now();
    return live.map((r) => toEntry(r, expiry.get(r.lease) ?? now + r.leaseTtlMs)).sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  }

  async watch(prefix: string, onChange: DiscoveryListener): Promise<DiscoveryWatch> {
    this.assertOpen();
    validatePrefix(prefix);
    const w = new EtcdPrefixWatch(prefix, onChange, {
      client: this.client,
      root: this.opts.root,
      logger: this.opts.logger,
      retryMs: this.opts.watchRetryMs,
      onClosed: (x) => this.watches.delete(x),
      onResynced: () => void this.watchResyncs++,
      onStaleEvent: () => void this.staleEventsIgnored++,
      expiryHoldMs: () => this.failover.expiryHoldMs(),
    });
    this.watches.add(w);
    try {
      await w.start();
    } catch (err) {
      await w.close();
      throw err;
    }
    return w;
  }

  /**
   * `connected` is false also while the member in use does not answer its probe (its watch may be
   * missing changes); `degradedReason` names silent members and a lost quorum.
   */
  status(): DiscoveryStatus {
    const s = this.client.status;
    const { inUseSilent, inUseError, ...members } = this.failover.status();
    return {
      backend: this.backend,
      connected: s.connected && !inUseSilent,
      endpoint: s.endpoint,
      lastError: s.connected && inUseSilent ? inUseError : s.lastError,
      reconnects: s.reconnects,
      leaseRegrants: this.leaseRegrants,
      watchResyncs: this.watchResyncs,
      ...members,
      memberFailovers: this.failover.failovers,
      staleEventsIgnored: this.staleEventsIgnored,
    };
  }

  /** Withdraws every record, closes every watch, revokes the leases. Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.failover.close();
    // Watches first: a closing process has no use for events about its own withdrawals.
    await Promise.all([...this.watches].map((w) => w.close()));
    await this.records.withdrawAll(this.opts.logger);
    const leases = await Promise.allSettled(this.leases.values());
    await Promise.all(leases.map((l) => (l.status === "fulfilled" ? l.value.close() : undefined)));
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  private leaseFor(ttlS: number): Promise<EtcdLease> {
    let lease = this.leases.get(ttlS);
    if (!lease) {
      const l = new EtcdLease(ttlS, { client: this.client, logger: this.opts.logger, onRegrant: () => void this.leaseRegrants++ });
      lease = l.grant().then(() => l);
      this.leases.set(ttlS, lease);
      // A failed grant is forgotten, so the next put tries again.
      lease.catch(() => this.leases.delete(ttlS));
    }
    return lease;
  }

  private assertOpen(): void {
    if (this.closed) throw new KvcrError("DISCOVERY_CLOSED", "discovery store is closed");
  }
}
