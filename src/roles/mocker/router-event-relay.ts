// Direct mode: one router-event stream per worker, relaying its ranks' engine events
// as {holder (worker id, dp rank), tier, kind, blocks [{seq_hash, local_hash}], parent_hash} on a
// PUB (framing, cursor and per-tick batching: src/roles/shared/routing/router-event-pub.ts).
//
// Batching: ranks step independently on the live loop, so events are queued per call and sent as
// ONE batch per worker at the end of the current tick (a microtask): every rank that stepped in
// the same loop round shares a batch, and a rank's events keep their order. `flush()` sends now.
// Topic: "" by default (as vLLM's default): the stream is per worker, its endpoint in the worker's
// discovery record already says whose it is, so routers subscribe to everything.
// Removals: engine removed events carry only sequence hashes; each rank's LocalHashIndex (filled
// by stored events, per tier) supplies the local hashes. A removal of a block never stored is
// counted and left out (the router cannot have indexed it from this stream either).
import { KvcrError } from "../../lib/errors.ts";
import type { Logger } from "../../lib/logger.ts";
import type { KvEvent } from "../../core/kv/kv-events.ts";
import type { RouterBlock } from "../../protocol/router-events.ts";
import { PubSocket } from "../../transport/zmtp/index.ts";
import type { PortPlan } from "../../transport/port-plan.ts";
import { RouterEventPub } from "../shared/routing/router-event-pub.ts";
import { bindOrClose } from "./bind.ts";
import { LocalHashIndex } from "./local-hash-index.ts";
import { RAW_SEND_HWM } from "./rank-publisher.ts";

export interface RouterEventRelayOptions {
  /** Interface to bind: the host of the worker's raw streams. */
  host: string;
  /** 0 (default) = pick a free port; see `port`. */
  port?: number;
  workerId: string;
  /** Ranks of this worker: outlets exist for 0 .. dataParallelSize-1. */
  dataParallelSize: number;
  /** Default "" (see header). */
  topic?: string;
  logger: Logger;
  sendHighWaterMark?: number;
  /** Where a port-0 bind takes its port from (the mocker's plan); default: the kernel picks. */
  ports?: PortPlan;
}

export interface RouterEventRelayStats {
  /** Batches sent (cursors used). */
  batchesPublished: number;
  eventsPublished: number;
  batchesDroppedByHwm: number;
  /** Removed blocks with no local hash on record (never stored through this relay): left out. */
  unknownRemovals: number;
  /** Engine events that cannot be relayed (an engine bug): logged and skipped. */
  invalidEvents: number;
  subscribers: number;
  subscribersOverLimits: number;
}

/** A rank's view of the relay, with the same publish(events, tsSeconds) shape as RankPublisher. */
export class RelayOutlet {
  constructor(
    private readonly relay: RouterEventRelay,
    readonly dpRank: number,
  ) {}

  publish(events: readonly KvEvent[], _tsSeconds: number): void {
    this.relay.publish(this.dpRank, events);
  }
}

interface RankState {
  readonly holder: { readonly workerId: string; readonly dpRank: number };
  readonly index: LocalHashIndex;
  readonly outlet: RelayOutlet;
}

export class RouterEventRelay {
  readonly endpoint: string;
  readonly port: number;
  readonly topic: string;
  readonly workerId: string;
  private readonly out: RouterEventPub;
  private readonly ranks: RankState[];
  private readonly logger: Logger;
  private unknownRemovals = 0;
  /** Engine events translate() could not relay (encode failures are counted by `out`). */
  private invalidEvents = 0;

  constructor(opts: RouterEventRelayOptions) {
    if (opts.workerId === "") throw new KvcrError("RELAY_INVALID", "router event relay: workerId must not be empty");
    if (!Number.isInteger(opts.dataParallelSize) || opts.dataParallelSize < 1) {
      throw new KvcrError("RELAY_INVALID", `router event relay: dataParallelSize must be an integer >= 1, got ${opts.dataParallelSize}`);
    }
    this.workerId = opts.workerId;
    this.topic = opts.topic ?? "";
    this.logger = opts.logger;
    this.ranks = Array.from({ length: opts.dataParallelSize }, (_, dpRank) => ({
      holder: { workerId: opts.workerId, dpRank },
      index: new LocalHashIndex(),
      outlet: new RelayOutlet(this, dpRank),
    }));
    const pub = new PubSocket({ logger: opts.logger, sendHighWaterMark: opts.sendHighWaterMark ?? RAW_SEND_HWM });
    ({ endpoint: this.endpoint, port: this.port } = bindOrClose(pub, opts.host, opts.port ?? 0, opts.ports));
    this.out = new RouterEventPub(pub, this.topic, opts.logger, `router events ${opts.workerId}`);
  }

  /** The outlet of rank `dpRank` (one object per rank, made once). */
  outlet(dpRank: number): RelayOutlet {
    const rank = this.ranks[dpRank];
    if (!rank) throw new KvcrError("RELAY_INVALID", `router event relay ${this.workerId}: no rank ${dpRank} (ranks 0..${this.ranks.length - 1})`);
    return rank.outlet;
  }

  /** Queues one step's events of `dpRank`; they go out with this tick's batch (or on flush()). */
  publish(dpRank: number, events: readonly KvEvent[]): void {
    if (events.length === 0 || this.out.isClosed) return;
    const rank = this.ranks[dpRank];
    if (!rank) throw new KvcrError("RELAY_INVALID", `router event relay ${this.workerId}: no rank ${dpRank} (ranks 0..${this.ranks.length - 1})`);
    for (let i = 0; i < events.length; i++) this.translate(rank, events[i]!);
  }

  /** Sends the queued events as one batch now (nothing when none are queued). */
  flush(): void {
    this.out.flush();
  }

  subscriberCount(): number {
    return this.out.subscriberCount();
  }

  /** Cursor the next batch will carry. */
  get nextCursor(): number {
    return this.out.cursor + 1;
  }

  stats(): RouterEventRelayStats {
    return {
      batchesPublished: this.out.cursor,
      eventsPublished: this.out.eventsPublished,
      batchesDroppedByHwm: this.out.droppedByHwm(),
      unknownRemovals: this.unknownRemovals,
      invalidEvents: this.invalidEvents + this.out.encodeErrors,
      subscribers: this.subscriberCount(),
      subscribersOverLimits: this.out.subscribersOverLimits(),
    };
  }

  /** Sends what is queued, then closes the PUB; later publish() calls do nothing. */
  close(): void {
    this.out.close();
  }

  [Symbol.dispose](): void {
    this.close();
  }

  private translate(rank: RankState, e: KvEvent): void {
    switch (e.kind) {
      case "stored": {
        const seq = e.blockHashes;
        const local = e.localHashes;
        if (seq.length === 0 || local.length !== seq.length) {
          this.invalidEvents++;
          this.logger.error(`router events ${this.workerId} rank ${rank.holder.dpRank}: skipping a stored event with ${seq.length} sequence and ${local.length} local hashes`);
          return;
        }
        const blocks = new Array<RouterBlock>(seq.length);
        for (let i = 0; i < seq.length; i++) blocks[i] = { seqHash: seq[i]!, localHash: local[i]! };
        rank.index.stored(e.tier, seq, local);
        this.out.push({ holder: rank.holder, tier: e.tier, kind: "stored", blocks, parentHash: e.parentHash });
        return;
      }
      case "removed": {
        const blocks: RouterBlock[] = [];
        for (const seqHash of e.blockHashes) {
          const localHash = rank.index.removed(e.tier, seqHash);
          if (localHash === undefined) this.unknownRemovals++;
          else blocks.push({ seqHash, localHash });
        }
        if (blocks.length > 0) this.out.push({ holder: rank.holder, tier: e.tier, kind: "removed", blocks, parentHash: null });
        return;
      }
      case "cleared":
        // A prefix-cache reset clears G1 only (docs/DECISIONS.md); the router clears per tier.
        rank.index.cleared(e.tier);
        this.out.push({ holder: rank.holder, tier: e.tier, kind: "cleared", blocks: NO_BLOCKS, parentHash: null });
        return;
    }
  }
}

const NO_BLOCKS: readonly RouterBlock[] = Object.freeze([]);
