// List-then-watch on etcd: one range read (its header revision R), then a /v3/watch stream from
// R+1. A dropped stream is reopened from the last revision seen, so no change is missed or doubled.
// When that history is gone — compacted, or etcd went back to a lower revision or is another
// cluster (wiped, restored, replaced; this stream or any other reply of the store shows it) — the
// prefix is listed again, diffed against what was reported, and watched from the new revision.
// Versions already reported (owner + revision) are never reported again, and an event older than
// the etcd revision held for its key (a late delete, an old put) is ignored (etcd-key-revisions.ts).
// The store also has it list again when it leaves a member that stopped answering, and, while a
// member is silent or just answered again, has it hold back lease expiries a moment: a resumed old
// etcd leader may revoke live leases, whose owners put the same records straight back.
import { b64, prefixRangeEnd, type EtcdClient } from "./etcd-client.ts";
import type { EtcdKv, EtcdWatchResult } from "./etcd-gateway.ts";
import { KeyRevisions } from "./etcd-key-revisions.ts";
import { decodeKv, etcdKey, revisionOf, toEntry, versionOf, type EtcdEnvelope } from "./etcd-record.ts";
import { notifyListener } from "./notify-listener.ts";
import type { DeleteReason, DiscoveryEvent, DiscoveryListener, DiscoveryLogger, DiscoveryWatch } from "./store.ts";

export interface WatchDeps {
  client: EtcdClient;
  root: string;
  logger: DiscoveryLogger;
  /** Wait before reopening a failed stream (doubles up to 8×). */
  retryMs: number;
  onClosed(watch: EtcdPrefixWatch): void;
  /** A re-list after lost history is done (counted as a resync). */
  onResynced(): void;
  /** An event older than what the watch holds for its key was ignored. */
  onStaleEvent(): void;
  /** How long to hold back a lease expiry before reporting it (0: report it at once). */
  expiryHoldMs(): number;
}

interface RangeReply {
  header?: { revision?: string; cluster_id?: string };
  kvs?: EtcdKv[];
}

/** Range-reads every record under `prefix` (root added): decoded, malformed ones logged and skipped. */
export async function rangePrefix(deps: Pick<WatchDeps, "client" | "root" | "logger">, prefix: string, signal?: AbortSignal): Promise<{ revision: bigint; clusterId: string; records: EtcdEnvelope[] }> {
  const full = etcdKey(deps.root, prefix);
  const reply = await deps.client.call<RangeReply>("/v3/kv/range", { key: b64(full), range_end: prefixRangeEnd(full) }, signal);
  const records: EtcdEnvelope[] = [];
  for (const kv of reply.kvs ?? []) {
    const d = decodeKv(deps.root, kv);
    if (d.ok) records.push(d.record);
    else deps.logger.warn(`discovery: skipping etcd record ${d.key}: ${d.problem}`);
  }
  return { revision: BigInt(reply.header?.revision ?? "0"), clusterId: reply.header?.cluster_id ?? "", records };
}

export class EtcdPrefixWatch implements DiscoveryWatch {
  /** What this watch last reported per key (version). */
  private readonly reported = new Map<string, string>();
  private lastRevision = 0n;
  private clusterId = "";
  private readonly abort = new AbortController();
  /** The open stream's, so a resync request wakes a stream waiting on a revision that may never come. */
  private streamAbort = new AbortController();
  /** Why the prefix must be listed again (set until a re-list succeeds). */
  private resyncWhy: string | undefined;
  /** The pending re-list is for lost history (counted as a resync), not a change of member. */
  private resyncCounted = false;
  private readonly revisions = new KeyRevisions();
  private loop: Promise<void> = Promise.resolve();
  private closed = false;
  /** Stream reopenings (after drops), for /metrics. */
  reopens = 0;
  /** The endpoint (index) the open stream rides; undefined between streams. */
  streamMember: number | undefined;
  /** Lease expiries held back (expiryHoldMs), by key: a put of the key cancels its report. */
  private readonly heldExpiries = new Map<string, { timer: ReturnType<typeof setTimeout>; sinceMs: number }>();

  constructor(
    readonly prefix: string,
    private readonly listener: DiscoveryListener,
    private readonly deps: WatchDeps,
  ) {}

  /** Lists and delivers the initial puts, then follows the stream in the background. */
  async start(): Promise<void> {
    await this.list();
    this.loop = this.follow();
  }

  /**
   * The history this watch follows is gone (`why`): list again and watch from the new revision.
   * `logged`: the caller has warned already (the store, once for all its watches). `counted`:
   * history was lost (a resync on /metrics); false when the store left a member that stopped
   * answering, whose stream may have missed changes.
   */
  requestResync(why: string, logged = false, counted = true): void {
    if (this.closed) return;
    if (this.resyncWhy === undefined && !logged) this.deps.logger.warn(`discovery: ${why}; listing ${JSON.stringify(this.prefix)} again and watching from the new revision`);
    this.resyncWhy = why;
    if (counted) this.resyncCounted = true;
    this.streamAbort.abort();
    this.streamMember = undefined; // the stream ends with that abort
  }

  /** A pending re-list; the flag stays set if it fails, so the next round tries again. */
  private async relist(): Promise<void> {
    await this.list();
    this.resyncWhy = undefined; // a change seen by this very range reply is covered by it
    if (this.resyncCounted) this.deps.onResynced();
    this.resyncCounted = false;
  }

  private async list(): Promise<void> {
    const { revision, clusterId, records } = await rangePrefix(this.deps, this.prefix, this.abort.signal);
    const now = Date.now();
    const live = new Map<string, EtcdEnvelope>();
    for (const r of records) if (!r.withdrawn) live.set(r.key, r);
    for (const key of [...this.reported.keys()]) {
      // Seen gone only in a re-list (history compacted, etcd wiped or restored): a lapse is the likelier cause.
      if (!live.has(key)) this.emitDelete(key, "expired");
    }
    for (const r of [...live.values()].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))) this.emitPut(r, now);
    this.revisions.listed(revision, records.map((r) => [r.key, r.modRevision] as const));
    this.lastRevision = revision;
    this.clusterId = clusterId;
  }

  private async follow(): Promise<void> {
    let failures = 0;
    const full = etcdKey(this.deps.root, this.prefix);
    while (!this.closed) {
      let woken: AbortSignal | undefined;
      this.streamMember = undefined;
      try {
        if (this.resyncWhy !== undefined) await this.relist();
        this.streamAbort = new AbortController();
        woken = this.streamAbort.signal;
        const signal = AbortSignal.any([this.abort.signal, this.streamAbort.signal]);
        const stream = this.deps.client.watch({ key: b64(full), range_end: prefixRangeEnd(full), start_revision: String(this.lastRevision + 1n), prev_kv: true }, signal, (i) => (this.streamMember = i));
        let received = false;
        for await (const result of stream) {
          failures = 0;
          received = true;
          if (this.closed) return;
          this.check(result);
          if (this.resyncWhy !== undefined) break;
          this.apply(result);
        }
        if (this.closed) return;
        if (!received && this.resyncWhy === undefined) await this.pause(this.deps.retryMs); // closed at once: do not spin
        this.reopens++;
      } catch (err) {
        this.streamMember = undefined;
        if (this.closed) return;
        if (woken?.aborted && this.resyncWhy !== undefined) continue; // woken to re-list, not a failure
        this.deps.client.markDown(`etcd watch ${this.prefix}: ${(err as Error).message}`);
        failures++;
        this.deps.logger.debug(`discovery: etcd watch ${this.prefix} dropped (${(err as Error).message}); reopening from revision ${this.lastRevision + 1n}`);
        await this.pause(this.deps.retryMs * Math.min(8, 2 ** (failures - 1)));
      }
    }
  }

  /** Asks for a re-list when this stream shows its history is gone. */
  private check(result: EtcdWatchResult): void {
    const header = result.header;
    if (header?.cluster_id && this.clusterId && header.cluster_id !== this.clusterId) {
      this.requestResync(`etcd cluster id changed from ${this.clusterId} to ${header.cluster_id} under watch ${JSON.stringify(this.prefix)} (a different etcd)`);
    } else if (result.created && header?.revision && BigInt(header.revision) < this.lastRevision) {
      // `created` gives etcd's current revision: below what this watch has seen, the history went back.
      this.requestResync(`etcd revision went back from ${this.lastRevision} to ${header.revision} under watch ${JSON.stringify(this.prefix)} (etcd wiped or restored from a backup)`);
    } else if (result.canceled) {
      this.requestResync(result.compact_revision
        ? `etcd compacted past revision ${this.lastRevision} under watch ${JSON.stringify(this.prefix)}`
        : `etcd canceled watch ${JSON.stringify(this.prefix)}${result.cancel_reason ? ` (${result.cancel_reason})` : ""}`);
    }
  }

  private apply(result: EtcdWatchResult): void {
    const now = Date.now();
    for (const ev of result.events ?? []) {
      const rev = revisionOf(ev.kv.mod_revision);
      if (rev > this.lastRevision) this.lastRevision = rev;
      if (!this.fresh(ev.type === "DELETE" ? "delete" : "put", decodeKv(this.deps.root, ev.kv).key, rev)) continue;
      if (ev.type === "DELETE") {
        const key = decodeKv(this.deps.root, ev.kv).key;
        const prev = ev.prev_kv ? decodeKv(this.deps.root, ev.prev_kv) : undefined;
        if (prev?.ok && prev.record.withdrawn) this.emitDelete(key, "removed");
        else this.expire(key);
        continue;
      }
      const d = decodeKv(this.deps.root, ev.kv);
      if (!d.ok) {
        this.deps.logger.warn(`discovery: skipping etcd record ${d.key}: ${d.problem}`);
        continue;
      }
      // A withdrawal's mark is not a change readers see; its delete follows.
      if (!d.record.withdrawn) this.emitPut(d.record, now);
    }
    if (!result.events?.length && !result.created && result.header?.revision) {
      const rev = BigInt(result.header.revision); // progress notification: all up to it were sent
      if (rev > this.lastRevision) this.lastRevision = rev;
    }
  }

  /** False (warned, counted) for an event older than what is held for its key; 0 = unknown, let through. */
  private fresh(type: "put" | "delete", key: string, rev: bigint): boolean {
    if (rev === 0n) return true;
    const a = this.revisions.admit(type, key, rev);
    if (a.fresh) return true;
    this.deps.onStaleEvent();
    this.deps.logger.warn(`discovery: ignoring a late ${type} of ${key} at etcd revision ${rev} under watch ${JSON.stringify(this.prefix)}: what is held is from revision ${a.heldRevision}, newer`);
    return false;
  }

  /** A lease expiry: reported now, or held back for a put of the same record (see the header). */
  private expire(key: string): void {
    const holdMs = this.deps.expiryHoldMs();
    if (holdMs <= 0 || !this.reported.has(key) || this.heldExpiries.has(key)) return this.emitDelete(key, "expired");
    const timer = setTimeout(() => {
      this.heldExpiries.delete(key);
      this.emitDelete(key, "expired");
    }, holdMs);
    this.heldExpiries.set(key, { timer, sinceMs: Date.now() });
  }

  private emitPut(record: EtcdEnvelope, nowMs: number): void {
    const held = this.heldExpiries.get(record.key);
    if (held) {
      clearTimeout(held.timer);
      this.heldExpiries.delete(record.key);
      const same = this.reported.get(record.key) === versionOf(record);
      this.deps.logger.warn(`discovery: ${record.key} lapsed and was put back ${same ? "unchanged " : ""}${Date.now() - held.sinceMs} ms later (its lease revoked, as a resumed etcd member may); ${same ? "not reported" : "reported as a change"}`);
    }
    const version = versionOf(record);
    if (this.reported.get(record.key) === version) return;
    this.reported.set(record.key, version);
    this.deliver({ type: "put", entry: toEntry(record, nowMs + record.leaseTtlMs) });
  }

  private emitDelete(key: string, reason: DeleteReason): void {
    const held = this.heldExpiries.get(key);
    if (held) {
      clearTimeout(held.timer);
      this.heldExpiries.delete(key);
    }
    if (!this.reported.delete(key)) return;
    this.deliver({ type: "delete", key, reason });
  }

  private deliver(event: DiscoveryEvent): void {
    if (!this.closed) notifyListener(this.listener, event, this.prefix, this.deps.logger);
  }

  private pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const signal = this.abort.signal;
      // The listener leaves with the timer: a long outage pauses many times on one signal.
      const onAbort = () => {
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(() => {
        signal.removeEventListener("abort", onAbort);
        resolve();
      }, ms);
      signal.addEventListener("abort", onAbort, { once: true });
    });
  }


  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.abort.abort();
    for (const held of this.heldExpiries.values()) clearTimeout(held.timer);
    this.heldExpiries.clear();
    await this.loop.catch(() => {});
    this.deps.onClosed(this);
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }
}
