// State-agent mode: the agent's normalized router-event stream. Per agent host record: SUB to its
// `router_events_endpoint` first, then load `GET /v1/snapshot` (state stamped with cursor N), apply
// it, and follow the stream from N + 1 (batches that arrived during the load are held and replayed
// in order; older ones skipped). A cursor gap, or a cursor back at 1 (the agent restarted),
// re-syncs from a fresh snapshot. CacheOwner residency maps to (worker, rank) through the
// snapshot's own sources, attachment records and worker records (routing-state.ts).
import type { Logger } from "../../lib/logger.ts";
import { AgentSnapshotSchema, type AgentSnapshot } from "../../protocol/agent-snapshot.ts";
import type { MetricFamily } from "../../protocol/prometheus.ts";
import { checkRecord, type AgentHostRecord } from "../../protocol/records.ts";
import type { RouterEvent } from "../../protocol/router-events.ts";
import type { SubSocket } from "../../transport/zmtp/index.ts";
import { subscribeRouterEvents } from "./router-event-sub.ts";
import type { RoutingState } from "./routing-state.ts";
import type { FetchLike } from "./worker-call.ts";

const RETRY_MS = 500;

interface Follow {
  readonly record: AgentHostRecord;
  readonly sub: SubSocket;
  live: boolean;
  /** Cursor of the next batch to apply (snapshot cursor + 1, then +1 per batch). */
  next: bigint;
  held: { cursor: bigint; events: RouterEvent[] }[];
  loading: Promise<void> | undefined;
  retry: ReturnType<typeof setTimeout> | undefined;
  /** Rank ids this agent's state touched (cleared on re-sync). */
  readonly rankIds: Set<number>;
  closed: boolean;
}

export class AgentFeed implements Disposable {
  private readonly follows = new Map<string, Follow>();
  snapshotsLoaded = 0;
  resyncs = 0;
  batches = 0;
  decodeErrors = 0;

  constructor(
    private readonly state: RoutingState,
    private readonly logger: Logger,
    private readonly fetchFn: FetchLike,
  ) {}

  follow(record: AgentHostRecord): void {
    const old = this.follows.get(record.agent_id);
    if (old && old.record.router_events_endpoint === record.router_events_endpoint && old.record.http_url === record.http_url) return;
    if (old) this.drop(record.agent_id);
    const sub = subscribeRouterEvents(record.router_events_endpoint, this.logger, {
      current: () => !f.closed,
      batch: (cursor, events) => this.onBatch(f, cursor, events),
      undecodable: (err) => this.onUndecodable(f, err),
    });
    const f: Follow = { record, sub, live: false, next: 0n, held: [], loading: undefined, retry: undefined, rankIds: new Set(), closed: false };
    this.follows.set(record.agent_id, f);
    this.logger.info(`agent ${record.agent_id}: following ${record.router_events_endpoint}, snapshot from ${record.http_url}`);
    // Subscribe first, then snapshot: what the snapshot misses arrives on the stream (or shows as a gap).
    // Rejects when the follow is dropped before the agent answered (its record lapsed): nothing to do.
    sub.connected().then(
      () => this.resync(f, "start"),
      () => {},
    );
  }

  drop(agentId: string): void {
    const f = this.follows.get(agentId);
    if (!f) return;
    this.follows.delete(agentId);
    f.closed = true;
    clearTimeout(f.retry);
    f.sub.close();
    for (const s of f.rankIds) this.state.clearRank(s);
    this.logger.info(`agent ${agentId} left: its residency leaves the index`);
  }

  /** Agents whose snapshot is loaded and whose stream is followed (tests wait on it). */
  liveCount(): number {
    let n = 0;
    for (const f of this.follows.values()) if (f.live) n++;
    return n;
  }

  /** Resolves once every followed agent's current load (if any) has finished. */
  async settled(): Promise<void> {
    await Promise.all([...this.follows.values()].map((f) => f.loading));
  }

  metrics(): MetricFamily[] {
    return [
      { name: "kvcr_frontend_agent_snapshots_total", help: "Agent snapshots loaded", type: "counter", samples: [{ value: this.snapshotsLoaded }] },
      { name: "kvcr_frontend_agent_resyncs_total", help: "Re-syncs from the agent snapshot after a cursor gap or an agent restart", type: "counter", samples: [{ value: this.resyncs }] },
      { name: "kvcr_frontend_agent_batches_total", help: "Router-event batches applied from the agent stream", type: "counter", samples: [{ value: this.batches }] },
    ];
  }

  [Symbol.dispose](): void {
    for (const id of [...this.follows.keys()]) this.drop(id);
  }

  private onUndecodable(f: Follow, err: Error): void {
    this.decodeErrors++;
    this.logger.warn(`agent ${f.record.agent_id}: undecodable router-event batch (${err.message}); re-syncing`);
    this.resync(f, "undecodable batch");
  }

  private onBatch(f: Follow, cursor: bigint, events: RouterEvent[]): void {
    if (!f.live) {
      f.held.push({ cursor, events });
      return;
    }
    this.applyInOrder(f, cursor, events);
  }

  private applyInOrder(f: Follow, cursor: bigint, events: RouterEvent[]): void {
    if (cursor === f.next) {
      this.applyEvents(f, events);
      f.next++;
      this.batches++;
    } else if (cursor > f.next) {
      this.logger.warn(`agent ${f.record.agent_id}: cursor gap (expected ${f.next}, got ${cursor}): re-syncing from the snapshot`);
      this.resync(f, "gap");
    } else if (cursor === 1n && f.next > 2n) {
      this.logger.warn(`agent ${f.record.agent_id}: cursor back at 1 (agent restarted): re-syncing from the snapshot`);
      this.resync(f, "agent restart");
    }
    // Otherwise an old batch (already in the snapshot): skipped.
  }

  private applyEvents(f: Follow, events: RouterEvent[]): void {
    for (const e of events) {
      const s = this.state.resolve(e.source);
      if (s !== undefined) f.rankIds.add(s);
    }
    this.state.apply(events);
  }

  private resync(f: Follow, why: string): void {
    if (f.closed || f.loading) return;
    if (why !== "start") this.resyncs++;
    f.live = false;
    f.held = [];
    f.loading = this.load(f)
      .then(() => {
        f.loading = undefined;
      })
      .catch((err: unknown) => {
        f.loading = undefined;
        if (f.closed) return;
        this.logger.warn(`agent ${f.record.agent_id}: snapshot load failed (${(err as Error).message}); retrying in ${RETRY_MS} ms`);
        f.retry = setTimeout(() => this.resync(f, "retry"), RETRY_MS);
      });
  }

  private async load(f: Follow): Promise<void> {
    const url = `${f.record.http_url.replace(/\/$/, "")}/v1/snapshot`;
    const res = await this.fetchFn(url, { method: "GET" });
    if (res.status !== 200) throw new Error(`GET ${url} answered ${res.status}`);
    const parsed = checkRecord(AgentSnapshotSchema, await res.json());
    if (!parsed.ok) throw new Error(`GET ${url}: bad snapshot at ${parsed.problem}`);
    if (f.closed) return;
    this.applySnapshot(f, parsed.value);
    this.snapshotsLoaded++;
    f.next = BigInt(parsed.value.cursor) + 1n;
    f.live = true;
    const held = f.held;
    f.held = [];
    for (const h of held) {
      if (!f.live) break; // a held gap started another re-sync
      this.applyInOrder(f, h.cursor, h.events);
    }
    this.logger.debug(`agent ${f.record.agent_id}: snapshot at cursor ${parsed.value.cursor} with ${parsed.value.sources.length} source(s) loaded; following from ${f.next}`);
  }

  private applySnapshot(f: Follow, snap: AgentSnapshot): void {
    for (const s of f.rankIds) this.state.clearRank(s);
    f.rankIds.clear();
    for (const src of snap.sources) f.rankIds.add(this.state.applySnapshotSource(src));
  }
}
