// The etcd lease of one process (per TTL) and the records attached to it. The lease is kept alive
// every TTL/3; while etcd is unreachable the process carries on, and when etcd answers again with
// the lease gone (it lapsed), a new lease is granted and every record is put again on it — only
// where the key is still free, so a record another process took over (last writer wins) stays theirs.
import { KvcrError } from "../lib/errors.ts";
import { b64, EtcdServerError, type EtcdClient, type EtcdHeader, type EtcdKv, type TxnCompare, type TxnOp } from "./etcd-client.ts";
import { decodeKv, encodeEnvelope, etcdKey } from "./etcd-record.ts";
import { requireJson } from "./file-record.ts";
import type { DiscoveryLogger, LeasedRecord, RecordOwner } from "./store.ts";

interface TxnReply {
  header?: EtcdHeader;
  succeeded?: boolean;
}

export interface LeaseDeps {
  client: EtcdClient;
  logger: DiscoveryLogger;
  onRegrant(): void;
}

export class EtcdLease {
  id = "0";
  /** Local estimate of when etcd drops the lease unless renewed. */
  expiresAtMs = 0;
  readonly records = new Set<EtcdRecord>();
  /** Records a re-put missed (etcd went away again mid-way): retried on the next tick. */
  private readonly unposted = new Set<EtcdRecord>();
  /** Withdrawals etcd did not take (unreachable): retried on each tick, or gone with the revoke. */
  private readonly unremoved = new Set<() => Promise<void>>();
  private timer: ReturnType<typeof setTimeout> | undefined;
  private closed = false;
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
    const periodMs = Math.max(100, Math.floor((this.ttlS * 1000) / 3));
    this.timer = setTimeout(() => {
      this.tick = this.keepAlive().then(
        (ok) => this.schedule(ok),
        () => this.schedule(false),
      );
    }, renewed ? periodMs : Math.min(periodMs, RETRY_MS));
  }

  /** One renewal; false when etcd gave no answer about the lease (retried soon). */
  private async keepAlive(): Promise<boolean> {
    if (this.closed) return true;
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
      this.deps.logger.warn(`discovery: etcd lease ${this.id} lapsed; granting a new one and putting ${this.records.size} record(s) again`);
      try {
        const reply = await this.deps.client.call<{ ID?: string; TTL?: string }>("/v3/lease/grant", { TTL: this.ttlS });
        if (!reply.ID) return false;
        this.id = reply.ID;
        this.expiresAtMs = Date.now() + Number(reply.TTL ?? this.ttlS) * 1000;
        this.deps.onRegrant();
        void this.repostAll([...this.records]);
        return true;
      } catch (err) {
        this.deps.logger.warn(`discovery: etcd lease re-grant failed, retrying: ${(err as Error).message}`);
        return false;
      }
    })().finally(() => (this.regranting = undefined)));
  }

  private async repostAll(records: readonly EtcdRecord[]): Promise<void> {
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

  forget(record: EtcdRecord): void {
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

export interface RecordDeps {
  client: EtcdClient;
  root: string;
  owner: RecordOwner;
  logger: DiscoveryLogger;
  onWithdrawn(record: EtcdRecord): void;
}

/** One record this process owns; writes for it are serialised (a re-put never lands after a withdraw). */
const WRITE_ATTEMPTS = 3;
/** Wait before retrying a renewal that got no answer. */
const RETRY_MS = 500;

export class EtcdRecord implements LeasedRecord {
  private valueJson: string;
  private revision = 1;
  /** etcd mod_revision of our last write: a withdraw deletes only that version. */
  private modRevision = "0";
  private withdrawn = false;
  private chain: Promise<void> = Promise.resolve();
  private readonly etcdKey: string;

  constructor(
    readonly key: string,
    value: unknown,
    private readonly lease: EtcdLease,
    private readonly deps: RecordDeps,
  ) {
    this.valueJson = requireJson(key, value);
    this.etcdKey = b64(etcdKey(deps.root, key));
  }

  get isWithdrawn(): boolean {
    return this.withdrawn;
  }

  async start(): Promise<void> {
    this.lease.records.add(this);
    try {
      await this.enqueue(() => this.write());
    } catch (err) {
      this.lease.forget(this);
      throw err;
    }
  }

  update(value: unknown): Promise<void> {
    const valueJson = requireJson(this.key, value);
    if (this.withdrawn) return Promise.reject(new KvcrError("DISCOVERY_WITHDRAWN", `discovery record ${this.key} was withdrawn; put it again`));
    return this.enqueue(async () => {
      if (this.withdrawn) return;
      this.valueJson = valueJson;
      this.revision += 1;
      await this.write();
    });
  }

  /**
   * After a lease re-grant: put the record again on the new lease where it is still ours (moved
   * over) or its key is free (it lapsed with the old lease); one another process put since stays theirs.
   */
  repost(): Promise<void> {
    return this.enqueue(async () => {
      if (this.withdrawn) return;
      let reply = this.modRevision === "0" ? { succeeded: false } : await this.txn([this.ours()], [this.putOp(false)]);
      if (!reply.succeeded) reply = await this.txn([{ key: this.etcdKey, target: "CREATE", create_revision: "0", result: "EQUAL" }], [this.putOp(false)]);
      if (reply.succeeded) this.modRevision = (reply as TxnReply).header?.revision ?? "0";
      else this.deps.logger.warn(`discovery: ${this.key} was put by another process while etcd was unreachable; leaving it to them`);
    });
  }

  withdraw(): Promise<void> {
    if (this.withdrawn) return this.chain;
    this.withdrawn = true;
    return this.enqueue(async () => {
      try {
        if (this.modRevision === "0") return; // never written
        await this.remove();
      } catch (err) {
        // etcd unreachable: the record would live on while this process keeps its lease alive, so
        // the removal is retried on every keep-alive tick (a closing store's revoke also drops it).
        this.deps.logger.warn(`discovery: withdrawing ${this.key} from etcd failed (${(err as Error).message}); retrying when etcd answers`);
        this.lease.removeLater(() => this.remove());
      } finally {
        this.lease.forget(this);
        this.deps.onWithdrawn(this);
      }
    });
  }

  private marked = false;

  /** Mark, then delete that exact version: watchers read the mark in prev_kv ("removed"), and a
   *  record another process has put since (last writer wins) is left alone. Resumable. */
  private async remove(): Promise<void> {
    if (!this.marked) {
      const marked = await this.txn([this.ours()], [this.putOp(true)]);
      if (marked.succeeded) this.modRevision = marked.header?.revision ?? "0";
      else if (!(await this.findOwnMark())) return; // another process's record now: not ours to delete
      this.marked = true;
    }
    await this.txn([this.ours()], [{ request_delete_range: { key: this.etcdKey } }]);
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.withdraw();
  }

  /** A mark whose reply was lost (timeout) is found by reading the key: our owner, withdrawn. */
  private async findOwnMark(): Promise<boolean> {
    const reply = await this.deps.client.call<{ kvs?: EtcdKv[] }>("/v3/kv/range", { key: this.etcdKey });
    const kv = reply.kvs?.[0];
    const d = kv ? decodeKv(this.deps.root, kv) : undefined;
    if (!kv || !d?.ok || !d.record.withdrawn || d.record.owner.instanceId !== this.deps.owner.instanceId) return false;
    this.modRevision = kv.mod_revision ?? "0";
    return true;
  }

  /**
   * A put, retried after a transport failure (a lost reply re-puts the same version: watchers see
   * one change, as they dedupe by owner and revision) and, once, on a new lease when etcd says the
   * lease is gone.
   */
  private async write(): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      const op = this.putOp(false);
      try {
        const reply = await this.deps.client.call<{ header?: EtcdHeader }>("/v3/kv/put", op.request_put);
        this.modRevision = reply.header?.revision ?? "0";
        return;
      } catch (err) {
        if (attempt >= WRITE_ATTEMPTS) throw err;
        if (err instanceof EtcdServerError) {
          if (!/lease not found/i.test(err.message) || !(await this.lease.regrant(op.request_put.lease))) throw err;
        }
      }
    }
  }

  private putOp(withdrawn: boolean): { request_put: { key: string; value: string; lease: string } } {
    const value = encodeEnvelope({ owner: this.deps.owner, revision: this.revision, leaseTtlMs: this.lease.ttlS * 1000, withdrawn }, this.valueJson);
    return { request_put: { key: this.etcdKey, value, lease: this.lease.id } };
  }

  private ours(): TxnCompare {
    return { key: this.etcdKey, target: "MOD", mod_revision: this.modRevision, result: "EQUAL" };
  }

  private txn(compare: TxnCompare[], success: TxnOp[]): Promise<TxnReply> {
    return this.deps.client.call<TxnReply>("/v3/kv/txn", { compare, success });
  }

  private enqueue(op: () => Promise<void>): Promise<void> {
    const next = this.chain.then(op);
    this.chain = next.catch(() => {}); // one failed write must not block later ones
    return next;
  }
}
