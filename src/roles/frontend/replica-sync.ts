// Router replica sync (docs/replica-sync.md): this frontend publishes each routed request's add,
// prefill_completed and free on its namespace's NATS subject, in batches of at most 256 events or
// 1 ms, plus a heartbeat with its live request ids; it applies the other replicas' batches to its
// own load (ReplicaLedger) and frees the requests of a replica silent past --router-replica-timeout.
import { randomBytes } from "node:crypto";
import type { ActiveRequest } from "../../core/routing/active-load.ts";
import { ReplicaLedger } from "../../core/routing/replica-ledger.ts";
import type { Logger } from "../../lib/logger.ts";
import type { MetricFamily } from "../../protocol/prometheus.ts";
import { decodeReplicaBatch, encodedSizeBound, ReplicaBatchEncoder, replicaSyncSubject, type ReplicaEvent } from "../../protocol/replica-sync.ts";
import type { NatsLink } from "../../transport/nats/nats-link.ts";
import { remoteLoadOf, type RemoteRequest } from "./remote-load.ts";
import { ReplicaSyncCounts } from "./replica-sync-metrics.ts";
import type { RoutingState } from "./routing-state.ts";
import type { RequestLifecycle, RoutePlan } from "./route-plan.ts";

/** At most this many events per batch, or what 1 ms gathers (as Dynamo's replica sync). */
export const MAX_BATCH_EVENTS = 256;
export const MAX_BATCH_MS = 1;

export interface ReplicaSyncOptions {
  state: RoutingState;
  link: NatsLink;
  namespace: string;
  /** Seconds a replica may stay silent before its requests are freed here. */
  timeoutS: number;
  logger: Logger;
  /** Monotonic ms (expiry) and wall-clock ms (sync lag, across processes). */
  now: () => number;
  wallMs: () => number;
  /** This replica's id on the wire (default: random). */
  routerId?: string;
}

export interface ReplicaSyncHealth {
  nats: "connected" | "unreachable";
  replicas: number;
  remote_requests: number;
}

export class ReplicaSync implements RequestLifecycle, AsyncDisposable {
  readonly routerId: string;
  readonly counts = new ReplicaSyncCounts();
  readonly ledger: ReplicaLedger<RemoteRequest>;
  private readonly subject: string;
  private readonly encoder = new ReplicaBatchEncoder();
  /** This replica's active requests (by their load handle) → wire request id. */
  private readonly active = new Map<ActiveRequest, number>();
  private nextRequestId = 0;
  private seq = 0;
  private pending: ReplicaEvent[] = [];
  private pendingBytes = 0;
  private flushTimer: ReturnType<typeof setTimeout> | undefined;
  private readonly heartbeat: ReturnType<typeof setInterval>;
  private stopped = false;

  constructor(private readonly opts: ReplicaSyncOptions) {
    this.routerId = opts.routerId ?? randomBytes(8).toString("hex");
    this.subject = replicaSyncSubject(opts.namespace);
    this.ledger = new ReplicaLedger(this.routerId, remoteLoadOf(opts.state), opts.timeoutS * 1000);
    opts.link.subscribe(this.subject, (data) => this.receive(data));
    // Heartbeats keep an idle replica known and heal lost frees; a third of the timeout, at most 1 s.
    const beatMs = Math.min(1000, (opts.timeoutS * 1000) / 3);
    this.heartbeat = setInterval(() => this.beat(), beatMs);
    opts.state.lifecycle = this;
  }

  get subjectName(): string {
    return this.subject;
  }

  routed(plan: RoutePlan): void {
    const id = ++this.nextRequestId;
    const req = plan.decision.request;
    this.active.set(req, id);
    this.push({ kind: "add", requestId: id, workerId: plan.worker.id, dpRank: plan.dpRank, hashes: req.hashes, prefillTokens: req.prefillTokens });
  }

  prefillCompleted(plan: RoutePlan): void {
    const id = this.active.get(plan.decision.request);
    if (id !== undefined) this.push({ kind: "prefill_completed", requestId: id, workerId: plan.worker.id, dpRank: plan.dpRank });
  }

  freed(plan: RoutePlan): void {
    const req = plan.decision.request;
    const id = this.active.get(req);
    if (id === undefined) return;
    this.active.delete(req);
    this.push({ kind: "free", requestId: id, workerId: plan.worker.id, dpRank: plan.dpRank });
  }

  families(): MetricFamily[] {
    const l = this.ledger;
    return this.counts.families({ connected: this.opts.link.connected, replicas: l.replicaCount, remoteRequests: l.requestCount, expiredReplicas: l.expiredReplicas, expiredRequests: l.expiredRequests });
  }

  health(): ReplicaSyncHealth {
    return { nats: this.opts.link.connected ? "connected" : "unreachable", replicas: this.ledger.replicaCount, remote_requests: this.ledger.requestCount };
  }

  /** Sends what is pending now, with the live ids when `withLive`. */
  flush(withLive = false): void {
    clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    const events = this.pending;
    if (events.length === 0 && !withLive) return;
    this.pending = [];
    this.pendingBytes = 0;
    const live = withLive ? [...this.active.values()] : null;
    const seq = this.seq + 1;
    const data = this.encoder.encode({ routerId: this.routerId, seq, sentAtMs: this.opts.wallMs(), live, events });
    if (data.length > this.opts.link.maxPayload) {
      this.counts.dropped("too_large", events.length);
      this.opts.logger.warn(`router replica sync: a batch of ${events.length} event(s) is ${data.length} bytes, over the NATS server's max_payload ${this.opts.link.maxPayload}: not sent`);
      return;
    }
    if (!this.opts.link.publish(this.subject, data)) return this.counts.dropped("nats_unreachable", events.length);
    this.seq = seq;
    this.counts.sent(events.length);
  }

  async [Symbol.asyncDispose](): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    clearInterval(this.heartbeat);
    if (this.opts.state.lifecycle === this) this.opts.state.lifecycle = undefined;
    // The last heartbeat (every request already freed by the shutdown) lets the others free ours at once.
    this.active.clear();
    this.flush(true);
    await this.opts.link.flush();
    this.ledger.clear();
  }

  private push(e: ReplicaEvent): void {
    if (this.stopped) return;
    this.pending.push(e);
    this.pendingBytes += encodedSizeBound(e);
    // Half the server's payload limit leaves room for the batch's own fields and a live list.
    if (this.pending.length >= MAX_BATCH_EVENTS || this.pendingBytes >= this.opts.link.maxPayload / 2) this.flush();
    else this.flushTimer ??= setTimeout(() => this.flush(), MAX_BATCH_MS);
  }

  private beat(): void {
    this.flush(true);
    for (const id of this.ledger.expire(this.opts.now())) this.opts.logger.warn(`router replica ${id} silent for over ${this.opts.timeoutS} s: its requests are freed here`);
  }

  private receive(data: Uint8Array): void {
    let batch;
    try {
      batch = decodeReplicaBatch(data);
    } catch (err) {
      this.counts.malformed++;
      this.opts.logger.warn(`router replica sync: dropped a malformed batch on ${this.subject}: ${(err as Error).message}`);
      return;
    }
    if (batch.routerId === this.routerId) return;
    const out = this.ledger.receive(batch, this.opts.now());
    this.counts.received(batch.events.length, out, Math.max(0, this.opts.wallMs() - batch.sentAtMs) / 1000);
  }
}
