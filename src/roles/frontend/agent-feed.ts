// State-agent mode: the agent's normalized router-event stream. Per agent host record: SUB to its
// `router_events_endpoint` first, then load `GET /v1/snapshot` (state stamped with cursor N), apply
// it, and follow the stream from N + 1 (batches that arrived during the load are held and replayed
// in order; older ones skipped). A cursor gap, or a cursor back at 1 (the agent restarted),
// re-syncs from a fresh snapshot. An agent whose host record appears again (a restart: same id,
// perhaps new ports) is followed afresh: its blocks leave the index, then snapshot and stream as
// above. CacheOwner residency maps to (worker, rank) through the snapshot's own holders,
// attachment records and worker records (routing-state.ts). Health: an agent is re-syncing while
// its stream is not connected or its snapshot is loading; its degraded slots come from polling
// its /health (the router stream carries no slot state).
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
/** A snapshot that takes longer is given up on (and retried): a hung agent must not stall the feed. */
const SNAPSHOT_TIMEOUT_MS = 15_000;
/** How often each followed agent's /health is read for its degraded slots. */
export const AGENT_HEALTH_POLL_MS = 1000;

/** What /health shows of the agents: degraded while one re-syncs or reports degraded slots. */
export interface AgentFeedHealth {
  followed: number;
  /** Agents whose stream is not connected or whose snapshot is loading. */
  resyncing: number;
  /** Degraded slots the followed agents report (their /health, polled). */
  degraded_slots: number;
  /** Workers publishing through an agent while no agent is followed live (set by the frontend, which knows the workers). */
  workers_without_agent?: number;
}

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
  /** A gap showed while a snapshot was loading (among the batches held meanwhile): load again after it. */
  resyncAgain: boolean;
  /** Degraded slots the agent's /health reported last. */
  degradedSlots: number;
  poll: ReturnType<typeof setInterval> | undefined;
  polling: boolean;
}

export class AgentFeed implements Disposable {
  private readonly follows = new Map<string, Follow>();
  snapshotsLoaded = 0;
  resyncs = 0;
  /** Host records of followed agents that appeared again (restarts). */
  reappearances = 0;
  batches = 0;
  decodeErrors = 0;

  constructor(
    private readonly state: RoutingState,
    private readonly logger: Logger,
    private readonly fetchFn: FetchLike,
  ) {}

  follow(record: AgentHostRecord): void {
    // A record for an agent already followed is a new incarnation (the store reports each version
    // once): a restart, with the same endpoints or new ones. Start over: blocks out, snapshot, stream.
    if (this.follows.has(record.agent_id)) {
      this.reappearances++;
      this.drop(record.agent_id, "appeared again (restarted?): its residency leaves the index until its snapshot is loaded");
    }
    const sub = subscribeRouterEvents(record.router_events_endpoint, this.logger, {
      current: () => !f.closed,
      batch: (cursor, events) => this.onBatch(f, cursor, events),
      undecodable: (err) => this.onUndecodable(f, err),
    });
    const f: Follow = { record, sub, live: false, next: 0n, held: [], loading: undefined, retry: undefined, rankIds: new Set(), closed: false, resyncAgain: false, degradedSlots: 0, poll: undefined, polling: false };
    f.poll = setInterval(() => this.pollHealth(f), AGENT_HEALTH_POLL_MS);
    this.follows.set(record.agent_id, f);
    this.logger.info(`agent ${record.agent_id}: following ${record.router_events_endpoint}, snapshot from ${record.http_url}`);
    // Subscribe first, then snapshot: what the snapshot misses arrives on the stream (or shows as a gap).
    // Rejects when the follow is dropped before the agent answered (its record lapsed): nothing to do.
    sub.connected().then(
      () => this.resync(f, "start"),
      () => {},
    );
  }

  drop(agentId: string, why = "left: its residency leaves the index"): void {
    const f = this.follows.get(agentId);
    if (!f) return;
    this.follows.delete(agentId);
    f.closed = true;
    clearTimeout(f.retry);
    clearInterval(f.poll);
    f.sub.close();
    for (const s of f.rankIds) this.state.clearRank(s);
    this.logger.info(`agent ${agentId} ${why}`);
  }

  health(): AgentFeedHealth {
    let resyncing = 0;
    let degraded = 0;
    for (const f of this.follows.values()) {
      if (!f.live || f.sub.peerCount === 0) resyncing++;
      degraded += f.degradedSlots;
    }
    return { followed: this.follows.size, resyncing, degraded_slots: degraded };
  }

  /** Agents whose snapshot is loaded and whose stream is followed (tests wait on it). */
  /**
   * The cursor of the agent stream a (worker, rank)'s state follows, as applied so far
   * (`GET /v1/index`); undefined when no live agent covers it.
   */
  cursorOfRank(rankId: number): number | undefined {
    for (const f of this.follows.values()) if (f.live && f.rankIds.has(rankId)) return Number(f.next - 1n);
    return undefined;
  }

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
      { name: "kvcr_frontend_agent_reappearances_total", help: "Agents whose host record appeared again (a restart): followed afresh from a snapshot", type: "counter", samples: [{ value: this.reappearances }] },
      { name: "kvcr_frontend_agents_resyncing", help: "Followed agents whose stream is not connected or whose snapshot is loading", type: "gauge", samples: [{ value: this.health().resyncing }] },
      { name: "kvcr_frontend_agent_degraded_slots", help: "Degraded slots the followed agents report on their /health", type: "gauge", samples: [{ value: this.health().degraded_slots }] },
    ];
  }

  [Symbol.dispose](): void {
    for (const id of [...this.follows.keys()]) this.drop(id);
  }

  /** Reads the agent's degraded slot count; an agent that does not answer keeps its last count. */
  private pollHealth(f: Follow): void {
    if (f.closed || f.polling) return;
    f.polling = true;
    const url = `${f.record.http_url.replace(/\/$/, "")}/health`;
    this.fetchFn(url, { method: "GET", signal: AbortSignal.timeout(AGENT_HEALTH_POLL_MS) })
      .then(async (res) => {
        const body = (await res.json()) as { slots?: { degraded?: unknown } };
        const n = body.slots?.degraded;
        if (!f.closed && typeof n === "number" && Number.isInteger(n) && n >= 0) f.degradedSlots = n;
      })
      .catch(() => {})
      .finally(() => {
        f.polling = false;
      });
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
      const s = this.state.resolve(e.holder);
      if (s !== undefined) f.rankIds.add(s);
    }
    this.state.apply(events);
  }

  private resync(f: Follow, why: string): void {
    if (f.closed) return;
    if (f.loading) {
      // The load in flight is already stale (a gap among its held batches, or a newer event):
      // stop applying, and load again once it settles.
      f.live = false;
      f.resyncAgain = true;
      return;
    }
    if (why !== "start") this.resyncs++;
    f.live = false;
    f.held = [];
    f.loading = this.load(f)
      .then(() => {
        f.loading = undefined;
        if (f.resyncAgain) {
          f.resyncAgain = false;
          this.resync(f, "gap");
        }
      })
      .catch((err: unknown) => {
        f.loading = undefined;
        f.resyncAgain = false;
        if (f.closed) return;
        this.logger.warn(`agent ${f.record.agent_id}: snapshot load failed (${(err as Error).message}); retrying in ${RETRY_MS} ms`);
        f.retry = setTimeout(() => this.resync(f, "retry"), RETRY_MS);
      });
  }

  private async load(f: Follow): Promise<void> {
    const url = `${f.record.http_url.replace(/\/$/, "")}/v1/snapshot`;
    const res = await this.fetchFn(url, { method: "GET", signal: AbortSignal.timeout(SNAPSHOT_TIMEOUT_MS) });
    if (res.status !== 200) throw new Error(`GET ${url} answered ${res.status}`);
    const parsed = checkRecord(AgentSnapshotSchema, await res.json());
    if (!parsed.ok) throw new Error(`GET ${url}: bad snapshot at ${parsed.problem}`);
    if (f.closed) return;
    this.applySnapshot(f, parsed.value);
    this.snapshotsLoaded++;
    f.next = BigInt(parsed.value.cursor) + 1n;
    f.live = true;
    this.pollHealth(f); // the agent's degraded slots now, not a poll interval later
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
    for (const src of snap.sources) f.rankIds.add(this.state.applySnapshotHolder(src));
  }
}
