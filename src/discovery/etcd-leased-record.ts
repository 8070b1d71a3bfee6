// One record this process owns on its etcd lease: put, updated, withdrawn (mark, then delete that
// exact version), and put again after a lease re-grant or once etcd was wiped or restored — where
// it is still ours (any version) or its key is free, so a record another process took over since
// (last writer wins) stays theirs.
import { b64, EtcdServerError, type EtcdClient } from "./etcd-client.ts";
import type { EtcdHeader, EtcdKv, TxnCompare, TxnOp } from "./etcd-gateway.ts";
import type { EtcdLease } from "./etcd-lease.ts";
import { decodeKv, encodeEnvelope, etcdKey } from "./etcd-record.ts";
import { OwnedRecord } from "./owned-record.ts";
import type { DiscoveryLogger, RecordOwner } from "./store.ts";

interface TxnReply {
  header?: EtcdHeader;
  succeeded?: boolean;
}

export interface RecordDeps {
  client: EtcdClient;
  root: string;
  owner: RecordOwner;
  logger: DiscoveryLogger;
  onWithdrawn(record: EtcdRecord): void;
}

/** Tries of one put (transport failures, a lease found gone). */
const WRITE_ATTEMPTS = 3;

/** One record this process owns; writes for it are serialised (a re-put never lands after a withdraw). */
export class EtcdRecord extends OwnedRecord {
  /** etcd mod_revision of our last write: a withdraw deletes only that version. */
  private modRevision = "0";
  private readonly etcdKey: string;

  constructor(
    key: string,
    value: unknown,
    private readonly lease: EtcdLease,
    private readonly deps: RecordDeps,
  ) {
    super(key, value);
    this.etcdKey = b64(etcdKey(deps.root, key));
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

  /**
   * After a lease re-grant, or once etcd went back (wiped, restored from a backup): put the record
   * again on the current lease where the key is free or holds a version of ours (moved over, or an
   * older one a restore brought back); one another process put since stays theirs. The key is read
   * first, since after a restore our last mod_revision means nothing; the put is guarded by what
   * was read.
   */
  repost(): Promise<void> {
    return this.enqueue(async () => {
      if (this.withdrawn) return;
      const kv = (await this.deps.client.call<{ kvs?: EtcdKv[] }>("/v3/kv/range", { key: this.etcdKey })).kvs?.[0];
      const found = kv ? decodeKv(this.deps.root, kv) : undefined;
      const theirs = `discovery: ${this.key} was put by another process meanwhile; leaving it to them`;
      if (kv && !(found?.ok && found.record.owner.instanceId === this.deps.owner.instanceId)) {
        this.deps.logger.warn(theirs);
        return;
      }
      if (kv && found?.ok && found.record.revision === this.revision && !found.record.withdrawn && kv.lease === this.lease.id) {
        this.modRevision = kv.mod_revision ?? "0"; // already there as we wrote it
        return;
      }
      const guard: TxnCompare = kv
        ? { key: this.etcdKey, target: "MOD", mod_revision: kv.mod_revision ?? "0", result: "EQUAL" }
        : { key: this.etcdKey, target: "CREATE", create_revision: "0", result: "EQUAL" };
      const reply = await this.txn([guard], [this.putOp(false)]);
      if (reply.succeeded) this.modRevision = reply.header?.revision ?? "0";
      else this.deps.logger.warn(theirs);
    });
  }

  withdraw(): Promise<void> {
    if (this.withdrawn) return this.settled();
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
  protected async write(): Promise<void> {
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
}
