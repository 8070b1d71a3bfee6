// Direct mode: one SUB per worker on the router-event relay its discovery record names, every
// batch applied to the routing index. The relay keeps no history, so a gap (a cursor jump) is
// counted and logged, not repaired; a cursor going back means the relay restarted, and that
// worker's residency is cleared before applying.
import type { Logger } from "../../lib/logger.ts";
import type { MetricFamily } from "../../protocol/prometheus.ts";
import type { RouterEvent } from "../../protocol/router-events.ts";
import type { SubSocket } from "../../transport/zmtp/index.ts";
import { subscribeRouterEvents } from "./router-event-sub.ts";
import type { RoutingState } from "./routing-state.ts";

interface Follow {
  readonly endpoint: string;
  readonly sub: SubSocket;
  lastCursor: bigint;
}

export class DirectFeed implements Disposable {
  private readonly follows = new Map<string, Follow>();
  batches = 0;
  gaps = 0;
  decodeErrors = 0;
  private lastDecodeLogMs = -Infinity;

  constructor(
    private readonly state: RoutingState,
    private readonly logger: Logger,
    private readonly now: () => number,
  ) {}

  /** Follows a worker's relay (idempotent; a new endpoint replaces the old subscription). */
  follow(workerId: string, endpoint: string): void {
    const old = this.follows.get(workerId);
    if (old?.endpoint === endpoint) return;
    if (old) this.drop(workerId);
    const sub = subscribeRouterEvents(endpoint, this.logger, {
      current: () => this.follows.get(workerId) === f,
      batch: (cursor, events) => this.onBatch(workerId, f, cursor, events),
      undecodable: (err) => this.onUndecodable(workerId, err),
    });
    const f: Follow = { endpoint, sub, lastCursor: 0n };
    this.follows.set(workerId, f);
    this.logger.debug(`worker ${workerId}: following router events at ${endpoint}`);
  }

  drop(workerId: string): void {
    const f = this.follows.get(workerId);
    if (!f) return;
    this.follows.delete(workerId);
    f.sub.close();
  }

  /** The last router-event cursor applied from a worker's relay (`GET /v1/index`); undefined before any. */
  cursorOf(workerId: string): number | undefined {
    const c = this.follows.get(workerId)?.lastCursor;
    return c === undefined || c === 0n ? undefined : Number(c);
  }

  /** Subscriptions established (tests wait on it). */
  connectedCount(): number {
    let n = 0;
    for (const f of this.follows.values()) if (f.sub.stats().peers > 0) n++;
    return n;
  }

  metrics(): MetricFamily[] {
    return [
      { name: "kvcr_frontend_direct_batches_total", help: "Router-event batches applied from worker relays", type: "counter", samples: [{ value: this.batches }] },
      { name: "kvcr_frontend_direct_gaps_total", help: "Cursor gaps on worker relays (events lost; not repairable in direct mode)", type: "counter", samples: [{ value: this.gaps }] },
      { name: "kvcr_frontend_event_decode_errors_total", help: "Router-event payloads that did not decode", type: "counter", samples: [{ value: this.decodeErrors }] },
    ];
  }

  [Symbol.dispose](): void {
    for (const id of [...this.follows.keys()]) this.drop(id);
  }

  private onUndecodable(workerId: string, err: Error): void {
    this.decodeErrors++;
    if (this.now() - this.lastDecodeLogMs > 60_000) {
      this.lastDecodeLogMs = this.now();
      this.logger.warn(`worker ${workerId}: undecodable router-event batch (${err.message}); dropped (logged at most once a minute)`);
    }
  }

  private onBatch(workerId: string, f: Follow, cursor: bigint, events: RouterEvent[]): void {
    if (f.lastCursor > 0n && cursor <= f.lastCursor) {
      this.logger.warn(`worker ${workerId}: router-event cursor went back from ${f.lastCursor} to ${cursor} (relay restarted): clearing its residency`);
      this.state.clearWorker(workerId);
    } else if (f.lastCursor > 0n && cursor > f.lastCursor + 1n) {
      this.gaps++;
      this.logger.debug(`worker ${workerId}: router events ${f.lastCursor + 1n}..${cursor - 1n} lost`);
    }
    f.lastCursor = cursor;
    this.batches++;
    this.state.apply(events);
  }
}
