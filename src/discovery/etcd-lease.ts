// The etcd lease of one process (per TTL). It is kept alive every TTL/3; while etcd is unreachable
// the process carries on, and when etcd answers with the lease gone (it lapsed, or etcd was wiped),
// a new lease is granted and every record on it is put again (etcd-leased-record.ts says where).
// Once etcd is seen to have gone back (restored from a backup), the lease is checked at once and
// the records put again even if etcd still knows the lease: the restore may have lost or aged them.
import { KvcrError } from "../lib/errors.ts";
import { EtcdServerError, type EtcdClient } from "./etcd-client.ts";
import type { DiscoveryLogger } from "./store.ts";

/** Wait before retrying a renewal that got no answer. */
const RETRY_MS = 500;
/** Renewal period while watchful (renewOftenFor). */
const WATCHFUL_RENEW_MS = 250;

export interface LeaseDeps {
  client: EtcdClient;
  logger: DiscoveryLogger;
  onRegrant(): void;
}

/** What the lease needs from each record on it (EtcdRecord, etcd-leased-record.ts). */
export interface LeasedEtcdRecord {
  /** Puts the record again on the lease's current id (after a re-grant, or etcd going back). */
  repost(): Promise<void>;
}

export class EtcdLease {
  id = "0";
  /** Local estimate of when etcd drops the lease unless renewed. */
  expiresAtMs = 0;
  readonly records = new Set<LeasedEtcdRecord>();
  /** Records a re-put missed (etcd went away again mid-way): retried on the next tick. */
  private readonly unposted = new Set<LeasedEtcdRecord>();
  /** Withdrawals etcd did not take (unreachable): retried on each tick, or gone with the revoke. */
  private readonly unremoved = new Set<() => Promise<void>>();
  private timer: ReturnType<typeof setTimeout> | undefined;
  /** etcd went back: the next tick (now) puts every record again. */
  private recheckDue = false;
  private closed = false;
  /** Renewals are skipped until this wall ms (DiscoveryStore.holdRenewals). */
  heldUntilMs = 0;
  /** Until this wall ms renewals come every WATCHFUL_RENEW_MS (renewOftenFor). */
  private watchfulUntilMs = 0;
  private tick: Promise<void> = Promise.resolve();

  constructor(
    readonly ttlS: number,
    private readonly deps: LeaseDeps,
  ) {}

  async grant(): Promise<void> {
    const reply = await this.deps.client.call<{ ID?: string; TTL?: string }>("/v3/lease/grant", { TTL: this.ttlS });
    if (!reply.ID) throw new KvcrError("ETCD_BAD_REPLY", "etcd lease grant returned no lease id");
    this.id = reply.ID;
    this.expiresAtMs = Date.now() + Number(reply.TTL ?? this.ttlS) * 1000;
    this.schedule();
  }

  private schedule(renewed = true): void {
    if (this.closed) return;
    clearTimeout(this.timer);
    // TTL/3 leaves two more chances before etcd drops the lease (as etcd's own clients do); after
    // a failed renewal the next try comes sooner, so a slow or blinking etcd does not cost the lease.
    const normalMs = Math.max(100, Math.floor((this.ttlS * 1000) / 3));
    const periodMs = Date.now() < this.watchfulUntilMs ? Math.min(normalMs, WATCHFUL_RENEW_MS) : normalMs;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.tick = this.keepAlive().then(
        (ok) => this.schedule(ok),
        () => this.schedule(false),
      );
    }, !renewed ? Math.min(periodMs, RETRY_MS) : this.recheckDue ? 0 : periodMs);
  }

  /**
   * etcd was seen going back or replaced: renew now (a lost lease is granted again) and put every
   * record again. A tick under way finishes first; the next one comes at once.
   */
  recheck(): void {
    if (this.closed || this.id === "0") return;
    this.recheckDue = true;
    if (this.timer !== undefined) this.schedule();
  }

  /**
   * For `forMs`, renew every quarter second: an etcd member answered again after a silence, and
   * an old leader of etcd 3.4 (before its late-2023 fix) revokes, as it resumes, every lease it saw
   * lapse while stopped. Renewing often finds the lease gone at once and puts the records back.
   */
  renewOftenFor(forMs: number): void {
    if (this.closed || this.id === "0") return;
    this.watchfulUntilMs = Date.now() + forMs;
    if (this.timer !== undefined) this.schedule();
  }

  /** One renewal; false when etcd gave no answer about the lease (retried soon). */
  private async keepAlive(): Promise<boolean> {
    if (this.closed || Date.now() < this.heldUntilMs) return true;
    let ttl: number;
    try {
      const reply = await this.deps.client.call<{ result?: { TTL?: string } }>("/v3/lease/keepalive", { ID: this.id });
      if (!reply.result) return false;
      ttl = Number(reply.result.TTL ?? 0); // etcd leaves TTL out (0) for a lease it does not have
    } catch (err) {
      // Only "lease not found" means the lease is gone; timeouts, leader changes and unreachable
      // etcd are retried (re-granting then would orphan records still on the old lease).
      if (!(err instanceof EtcdServerError && /lease not found/i.test(err.message))) return false;
      ttl = 0;
    }
    if (this.closed) return true;
    if (ttl > 0) {
      this.expiresAtMs = Date.now() + ttl * 1000;
      if (this.recheckDue) {
        this.recheckDue = false;
        this.deps.logger.warn(`discovery: etcd went back but still has lease ${this.id}; putting its ${this.records.size} record(s) again`);
        this.unposted.clear();
        await this.repostAll([...this.records]);
      }
      if (this.unposted.size > 0) await this.repostAll([...this.unposted]);
      for (const remove of [...this.unremoved]) await remove().then(() => this.unremoved.delete(remove), () => {});
      return true;
    }
    return this.regrant(this.id);
  }

  private regranting: Promise<boolean> | undefined;

  /**
   * The lease `lapsedId` is gone (it lapsed while etcd was unreachable or too slow, or etcd lost
   * it): grant a new one and put every record again on it. Concurrent callers share one grant; a
   * caller holding an id already replaced just gets the new one. Re-puts run behind each record's
   * pending writes (not awaited here, so a write that asked for the new lease is not waited on).
   */
  regrant(lapsedId: string): Promise<boolean> {
    if (this.closed) return Promise.resolve(false);
    if (lapsedId !== this.id) return Promise.resolve(true);
    return (this.regranting ??= (async () => {
      this.deps.logger.warn(`discovery: etcd lease ${this.id} is gone (lapsed, or etcd lost it); granting a new one and putting ${this.records.size} record(s) again`);
      try {
        const reply = await this.deps.client.call<{ ID?: string; TTL?: string }>("/v3/lease/grant", { TTL: this.ttlS });
        if (!reply.ID) return false;
        this.id = reply.ID;
        this.expiresAtMs = Date.now() + Number(reply.TTL ?? this.ttlS) * 1000;
        this.deps.onRegrant();
        this.recheckDue = false; // every record is put again on the new lease
        void this.repostAll([...this.records]);
        return true;
      } catch (err) {
        this.deps.logger.warn(`discovery: etcd lease re-grant failed, retrying: ${(err as Error).message}`);
        return false;
      }
    })().finally(() => (this.regranting = undefined)));
  }

  private async repostAll(records: readonly LeasedEtcdRecord[]): Promise<void> {
    await Promise.all(
      records.map(async (r) => {
        try {
          await r.repost();
          this.unposted.delete(r);
        } catch {
          this.unposted.add(r);
        }
      }),
    );
  }

  /** A withdrawal to finish once etcd answers again (until then the record lives on this lease). */
  removeLater(remove: () => Promise<void>): void {
    this.unremoved.add(remove);
  }

  forget(record: LeasedEtcdRecord): void {
    this.records.delete(record);
    this.unposted.delete(record);
  }

  /** Stops renewing and revokes the lease (deleting anything still on it). */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearTimeout(this.timer);
    await this.tick;
    if (this.id !== "0") await this.deps.client.call("/v3/lease/revoke", { ID: this.id }).catch(() => {});
  }
}
