// The other frontend replicas' active requests, as their sync batches describe them, applied to
// this router's load through a RemoteLoad: an add counts the request on its (worker, rank), a
// prefill_completed drops its prefill, a free releases it. A heartbeat's live list frees what its
// sender no longer holds (a lost free); a replica silent past the timeout has all its requests freed.
import type { ReplicaBatch } from "../../protocol/replica-sync.ts";

/** Where remote requests are counted (the frontend's routing state). */
export interface RemoteLoad<H> {
  /** Counts a remote request; undefined when (worker, rank) is unknown here (not counted). */
  add(workerId: string, dpRank: number, hashes: ArrayLike<bigint>, prefillTokens: number): H | undefined;
  firstToken(handle: H): void;
  free(handle: H): void;
}

/** What one batch did here. */
export interface BatchOutcome {
  /** Events that changed this router's load. */
  applied: number;
  /** Events that changed nothing: unknown worker, unknown or already freed request, repeated add. */
  ignored: number;
  /** Batches of this sender that never arrived (a gap in its batch_seq). */
  lost: number;
  /** Requests freed because the sender's live list no longer names them. */
  staleFreed: number;
}

interface Replica<H> {
  lastHeardMs: number;
  lastSeq: number;
  readonly requests: Map<number, H>;
}

export class ReplicaLedger<H> {
  private readonly replicas = new Map<string, Replica<H>>();
  /** Replicas declared gone after their silence, over the ledger's life. */
  expiredReplicas = 0;
  /** Their requests freed then. */
  expiredRequests = 0;

  constructor(
    private readonly selfId: string,
    private readonly load: RemoteLoad<H>,
    private readonly timeoutMs: number,
  ) {}

  /** Applies one batch received at `nowMs` (this process's monotonic clock). Own batches are skipped. */
  receive(batch: ReplicaBatch, nowMs: number): BatchOutcome {
    const out: BatchOutcome = { applied: 0, ignored: 0, lost: 0, staleFreed: 0 };
    if (batch.routerId === this.selfId) return out;
    let r = this.replicas.get(batch.routerId);
    if (r === undefined) this.replicas.set(batch.routerId, (r = { lastHeardMs: nowMs, lastSeq: batch.seq - 1, requests: new Map() }));
    r.lastHeardMs = nowMs;
    if (batch.seq > r.lastSeq + 1) out.lost = batch.seq - r.lastSeq - 1;
    r.lastSeq = Math.max(r.lastSeq, batch.seq);
    for (const e of batch.events) {
      const held = r.requests.get(e.requestId);
      if (e.kind === "add") {
        const h = held === undefined ? this.load.add(e.workerId, e.dpRank, e.hashes, e.prefillTokens) : undefined;
        if (h === undefined) out.ignored++;
        else {
          r.requests.set(e.requestId, h);
          out.applied++;
        }
      } else if (held === undefined) out.ignored++;
      else if (e.kind === "prefill_completed") {
        this.load.firstToken(held);
        out.applied++;
      } else {
        this.load.free(held);
        r.requests.delete(e.requestId);
        out.applied++;
      }
    }
    if (batch.live !== null) out.staleFreed = this.keepOnly(r, batch.live);
    return out;
  }

  /** Frees every request of the replicas silent for longer than the timeout; returns their ids. */
  expire(nowMs: number): string[] {
    const gone: string[] = [];
    for (const [id, r] of this.replicas) {
      if (nowMs - r.lastHeardMs <= this.timeoutMs) continue;
      for (const h of r.requests.values()) this.load.free(h);
      this.expiredRequests += r.requests.size;
      this.expiredReplicas++;
      this.replicas.delete(id);
      gone.push(id);
    }
    return gone;
  }

  /** Frees everything held for every replica (this router stops following them). */
  clear(): void {
    for (const r of this.replicas.values()) for (const h of r.requests.values()) this.load.free(h);
    this.replicas.clear();
  }

  /** Replicas heard from within the timeout (the ones not expired yet). */
  get replicaCount(): number {
    return this.replicas.size;
  }

  /** Remote requests counted now. */
  get requestCount(): number {
    let n = 0;
    for (const r of this.replicas.values()) n += r.requests.size;
    return n;
  }

  /** Frees the replica's requests its live list does not name. */
  private keepOnly(r: Replica<H>, live: readonly number[]): number {
    if (r.requests.size === 0) return 0;
    const keep = new Set(live);
    let freed = 0;
    for (const [id, h] of r.requests) {
      if (keep.has(id)) continue;
      this.load.free(h);
      r.requests.delete(id);
      freed++;
    }
    return freed;
  }
}
