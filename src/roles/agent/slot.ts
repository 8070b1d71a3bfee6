// One agent slot: a CacheOwner's residency, its raw ingest (SUB on the raw endpoint filtered on
// the raw topic, DEALER on the replay endpoint for repairs, the publisher's state dump over HTTP
// when replay cannot rebuild it), sockets, timers, faults and counters; ordering is
// RawSequencer's, normalization SlotResidency's. A slot's failure touches no other.
import type { BlockHasher } from "../../core/kv/block-hash.ts";
import type { Logger } from "../../lib/logger.ts";
import { decodeFlat, FlatBatch, flatFromBatch } from "../../protocol/kv-events/flat-decode.ts";
import { decodeBatch, liveSeqNumber, parseReplayReply, replayRequest } from "../../protocol/kv-events/index.ts";
import type { RouterEvent } from "../../protocol/router-events.ts";
import { MESSAGE_TOO_LARGE } from "../../protocol/zmtp/parser.ts";
import { DealerSocket, SubSocket } from "../../transport/zmtp/index.ts";
import { addSequencerCounters, NO_SEQUENCER_COUNTERS, RawSequencer, type SequencerCounters } from "./raw-sequencer.ts";
import { SlotDumps } from "./slot-dumps.ts";
import { batchFault, SlotResidency } from "./slot-residency.ts";
import type { SourceIntent } from "./sources.ts";

export const SLOT_STATES = ["active", "detached", "failed", "quarantined"] as const;
export type SlotState = (typeof SLOT_STATES)[number];

/** Default of --max-event-payload-bytes: the largest raw payload taken on any path (live, replay, dump). */
export const DEFAULT_MAX_EVENT_PAYLOAD_BYTES = 16 * 1024 * 1024;
/**
 * The ZMTP message limit of a slot's sockets for a payload limit: twice it (plus the topic and seq
 * frames), so a payload somewhat over the limit is read, dropped and counted by the slot, and only
 * a far bigger one resets the connection (which reconnects; the loss then shows as a gap).
 */
export function socketMessageLimit(maxPayloadBytes: number): number {
  return maxPayloadBytes * 2 + 64 * 1024;
}
/** Decode errors are logged at most this often per slot (the rest are counted). */
const DECODE_LOG_INTERVAL_MS = 60_000;

export interface SlotDeps {
  logger: Logger;
  hasher: BlockHasher;
  /** Queues a router event on the outbound stream. */
  emit(event: RouterEvent): void;
  /** Sends queued router events now; returns the cursor reflecting them. */
  flush(): number;
  /** Wall clock in unix seconds (ingest lag = now − batch ts). */
  nowSeconds(): number;
  nowMs(): number;
  observeLagSeconds(lag: number): void;
  /** The replay endpoint's deadline per reply (no end marker by then: carry on live); also a state dump's. */
  replayTimeoutMs: number;
  /** Largest raw payload taken (live, replay, dump); a bigger one is dropped, counted, and the slot resyncs (default 16 MiB). */
  maxPayloadBytes?: number;
  /** HTTP for state dumps (tests inject one); default: fetch. */
  fetch?: (url: string, init: RequestInit) => Promise<Response>;
  /** State changes (attachment records, logs). */
  changed(slot: AgentSlot): void;
}

export interface SlotCounters {
  rawBatches: number;
  decodeErrors: number;
  faults: number;
  /** Payloads over the limit (any path), dropped. */
  oversizePayloads: number;
}

/** One flat batch for every slot: a payload is decoded and applied synchronously, never interleaved. */
const flat = new FlatBatch();

/** Decodes a raw payload (hot path first, decode.ts for other layouts); a string is the decode error. */
export function decodeRaw(payload: Uint8Array): FlatBatch | string {
  if (decodeFlat(payload, flat)) return flat;
  try {
    flatFromBatch(decodeBatch(payload), flat);
    return flat;
  } catch (err) {
    return (err as Error).message;
  }
}

export class AgentSlot {
  state: SlotState = "detached";
  intent: SourceIntent;
  fault: string | undefined;
  /** Outbound cursor of the slot's last attach barrier. */
  attachCursor = 0;
  readonly residency: SlotResidency;
  readonly counters: SlotCounters = { rawBatches: 0, decodeErrors: 0, faults: 0, oversizePayloads: 0 };
  /** Counters of earlier attachments (a sequencer lives for one attachment). */
  private readonly pastSeq: SequencerCounters = { ...NO_SEQUENCER_COUNTERS };
  /** The attachment's state dumps (when its source has a dump URL). */
  private dumps: SlotDumps | undefined;
  private readonly maxPayloadBytes: number;
  private sequencer: RawSequencer | undefined;
  private sub: SubSocket | undefined;
  private dealer: DealerSocket | undefined;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private topic = new Uint8Array(0);
  /** Bumped on every (re)attach and stop: callbacks of an older generation do nothing. */
  private generation = 0;
  private lastDecodeLogMs = Number.NEGATIVE_INFINITY;
  private lastRangeLogMs = Number.NEGATIVE_INFINITY;
  private lastOversizeLogMs = Number.NEGATIVE_INFINITY;
  /** deps.nowMs() of the last batch applied to the residency (any attachment); undefined before. */
  lastBatchMs: number | undefined;

  constructor(
    readonly cacheOwnerId: string,
    intent: SourceIntent,
    private readonly deps: SlotDeps,
  ) {
    this.intent = intent;
    this.maxPayloadBytes = deps.maxPayloadBytes ?? DEFAULT_MAX_EVENT_PAYLOAD_BYTES;
    this.residency = new SlotResidency({ cacheOwnerId }, deps.hasher, deps.emit);
  }

  /** The raw cursor (last applied seq, -1 before any). */
  get rawCursor(): number {
    return this.sequencer?.cursor ?? -1;
  }

  /** Back-filling from the replay endpoint now (on attach, or repairing a gap). */
  get replaying(): boolean {
    return this.sequencer?.isRepairing ?? false;
  }

  get sequencerCounters(): SequencerCounters {
    const out = { ...this.pastSeq };
    if (this.sequencer) addSequencerCounters(out, this.sequencer.counters);
    return out;
  }

  /** The residency may miss blocks (a loss not yet made good by a state dump): said on /v1/slots and /health. */
  get degraded(): boolean {
    return this.state === "active" && (this.sequencer?.degraded ?? false);
  }

  /** Why the slot is degraded, for /v1/slots; undefined when it is not. */
  get degradedReason(): string | undefined {
    if (!this.degraded) return undefined;
    if (this.intent.state_dump_url === undefined) return "batches were lost and the publisher serves no state dump: cleared, filling from live events";
    return this.sequencer?.isDumping ? "rebuilding (on attach, or batches were lost): waiting for the publisher's state dump" : "batches were lost and the state dump failed: cleared, filling from live events until a retry succeeds";
  }

  /** The raw SUB has a live (handshaken) connection to the raw endpoint now. */
  get connected(): boolean {
    return (this.sub?.peerCount ?? 0) > 0;
  }

  /** (Re)attaches to `intent`: cleared barrier, fresh cursor, new sockets. */
  attach(intent: SourceIntent): void {
    this.stopIngest();
    this.intent = intent;
    this.fault = undefined;
    this.residency.reset();
    this.attachCursor = this.deps.flush();
    this.state = "active";
    this.startIngest();
    this.deps.changed(this);
  }

  detach(): void {
    this.leave("detached", undefined);
  }

  /** Ambiguous owner (two live intents) and similar: residency retracted until resolved. */
  fail(reason: string): void {
    this.leave("failed", reason);
  }

  quarantine(fault: string): void {
    this.counters.faults++;
    this.deps.logger.warn(`slot ${this.cacheOwnerId}: quarantined: ${fault} (recovers when its intent changes incarnation)`);
    this.leave("quarantined", fault);
  }

  /** Stops ingest without events (agent shutdown). */
  close(): void {
    this.stopIngest();
  }

  private leave(state: SlotState, fault: string | undefined): void {
    if (this.state === state && this.fault === fault) return;
    const wasActive = this.state === "active";
    this.stopIngest();
    this.state = state;
    this.fault = fault;
    if (wasActive) this.residency.reset();
    this.deps.changed(this);
  }

  private stopIngest(): void {
    this.generation++;
    clearTimeout(this.timer);
    this.timer = undefined;
    this.dumps?.close();
    this.dumps = undefined;
    this.sub?.close();
    this.dealer?.close();
    this.sub = undefined;
    this.dealer = undefined;
    if (this.sequencer) {
      addSequencerCounters(this.pastSeq, this.sequencer.counters);
      this.sequencer = undefined;
    }
  }

  private startIngest(): void {
    const gen = this.generation;
    const { logger } = this.deps;
    const intent = this.intent;
    this.topic = new TextEncoder().encode(intent.raw_topic);
    const sequencer = new RawSequencer(
      {
        apply: (seq, payload, replayed) => this.applyPayload(gen, seq, payload, replayed),
        resync: (reason) => {
          if (gen !== this.generation) return;
          logger.info(`slot ${this.cacheOwnerId}: resynchronising: ${reason}`);
          this.residency.reset();
        },
        requestReplay: (from) => this.requestReplay(gen, from),
        requestDump: () => this.dumps?.request(),
        applyDump: (seq, payload) => this.applyDump(gen, seq, payload),
      },
      intent.replay_endpoint !== undefined,
      intent.state_dump_url !== undefined,
    );
    this.sequencer = sequencer;
    if (intent.state_dump_url !== undefined) {
      this.dumps = new SlotDumps({
        label: this.cacheOwnerId,
        url: () => this.intent.state_dump_url ?? intent.state_dump_url!,
        sequencer,
        logger,
        maxBytes: this.maxPayloadBytes,
        timeoutMs: this.deps.replayTimeoutMs,
        fetch: this.deps.fetch,
        oversize: () => void this.counters.oversizePayloads++,
      });
    }
    const sub = new SubSocket({ logger, maxMessageBytes: socketMessageLimit(this.maxPayloadBytes) });
    this.sub = sub;
    sub.onMessage((frames) => {
      if (gen !== this.generation) return;
      const seq = liveSeqNumber(frames);
      if (typeof seq === "string") {
        this.decodeError(seq);
        return;
      }
      sequencer.live(seq, frames[2]!);
    });
    // A message far over the limit never reaches onMessage: the SUB drops the connection (and dials
    // again). That batch is lost all the same: counted, and the slot rebuilds (dump) and says so.
    sub.onPeerDropped((reason) => {
      if (gen !== this.generation || !reason.includes(MESSAGE_TOO_LARGE)) return;
      this.counters.oversizePayloads++;
      sequencer.lostBatch(`a raw message over the socket's limit (${reason})`);
    });
    sub.subscribe(this.topic);
    sub.connect(intent.raw_endpoint);
    if (intent.replay_endpoint !== undefined || intent.state_dump_url !== undefined) {
      // Subscribed first, then back-fill (replay, or a state dump): batches published after it reach the SUB.
      sub.connected().then(
        () => {
          if (gen === this.generation && sequencer.cursor === -1 && !sequencer.isRepairing && !sequencer.isDumping) sequencer.start();
        },
        () => {},
      );
    }
  }

  private requestReplay(gen: number, from: number): void {
    if (gen !== this.generation) return;
    const endpoint = this.intent.replay_endpoint!;
    if (!this.dealer) {
      const dealer = new DealerSocket({ logger: this.deps.logger, maxMessageBytes: socketMessageLimit(this.maxPayloadBytes) });
      dealer.onMessage((frames) => this.replayReply(gen, frames));
      dealer.connect(endpoint);
      this.dealer = dealer;
    }
    this.dealer.send(replayRequest(BigInt(from)));
    this.armReplayTimer(gen);
  }

  private armReplayTimer(gen: number): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      if (gen !== this.generation || !this.sequencer?.isRepairing) return;
      this.deps.logger.warn(`slot ${this.cacheOwnerId}: no end marker from replay ${this.intent.replay_endpoint} within ${this.deps.replayTimeoutMs} ms; continuing live`);
      this.sequencer.replayEnded();
    }, this.deps.replayTimeoutMs);
  }

  /** One reply on the replay DEALER (either layout, see protocol/kv-events/replay.ts). */
  private replayReply(gen: number, frames: Uint8Array[]): void {
    const sequencer = this.sequencer;
    if (gen !== this.generation || !sequencer?.isRepairing) return;
    const reply = parseReplayReply(frames, this.topic);
    if (reply.kind === "bad") return this.decodeError(reply.problem);
    if (reply.kind === "end") {
      clearTimeout(this.timer);
      sequencer.replayEnded();
      return;
    }
    if (reply.kind === "other-topic") return this.armReplayTimer(gen);
    // Neither an unusable seq nor one outside the requested range extends the deadline.
    if (reply.seq > BigInt(Number.MAX_SAFE_INTEGER)) return this.decodeError(`replay reply: seq ${reply.seq} is beyond 2^53`);
    if (sequencer.replayed(Number(reply.seq), reply.payload) === "out-of-range") {
      const now = this.deps.nowMs();
      if (now - this.lastRangeLogMs >= DECODE_LOG_INTERVAL_MS) {
        this.lastRangeLogMs = now;
        this.deps.logger.warn(`slot ${this.cacheOwnerId}: replay reply seq ${reply.seq} from ${this.intent.replay_endpoint} is outside the requested range; dropped (counted; logged at most once a minute)`);
      }
      return;
    }
    this.armReplayTimer(gen);
  }

  private applyPayload(gen: number, seq: number, payload: Uint8Array, replayed: boolean): void {
    if (gen !== this.generation || this.state !== "active") return;
    this.counters.rawBatches++;
    if (payload.length > this.maxPayloadBytes) {
      // Not a fault: the batch is lost and the slot rebuilds (state dump) instead of quarantining.
      this.counters.oversizePayloads++;
      const now = this.deps.nowMs();
      if (now - this.lastOversizeLogMs >= DECODE_LOG_INTERVAL_MS) {
        this.lastOversizeLogMs = now;
        this.deps.logger.warn(`slot ${this.cacheOwnerId}: payload of ${payload.length} bytes at seq ${seq} exceeds --max-event-payload-bytes ${this.maxPayloadBytes}; dropped, resyncing (counted; logged at most once a minute)`);
      }
      this.sequencer?.lostBatch(`payload over the limit at seq ${seq}`);
      return;
    }
    const batch = decodeRaw(payload);
    if (typeof batch === "string") {
      this.decodeError(`seq ${seq}: ${batch}`);
      this.sequencer?.lostBatch(`undecodable batch at seq ${seq}`);
      return;
    }
    const fault = batchFault(batch, this.intent.dp_rank);
    if (fault !== undefined) {
      this.quarantine(`${fault} (seq ${seq})`);
      return;
    }
    this.residency.applyBatch(batch);
    this.lastBatchMs = this.deps.nowMs();
    if (!replayed) this.deps.observeLagSeconds(Math.max(0, this.deps.nowSeconds() - batch.ts));
  }

  /** The sequencer's applyDump: the dump replaces the residency, or a string says why it cannot. */
  private applyDump(gen: number, _seq: number, payload: Uint8Array): string | undefined {
    if (gen !== this.generation || this.state !== "active") return "slot no longer attached";
    const batch = decodeRaw(payload);
    if (typeof batch === "string") {
      this.decodeError(`state dump: ${batch}`);
      return `undecodable dump: ${batch}`;
    }
    const fault = batchFault(batch, this.intent.dp_rank);
    if (fault !== undefined) return `dump: ${fault}`;
    this.residency.reset();
    this.residency.applyBatch(batch);
    this.lastBatchMs = this.deps.nowMs();
    return undefined;
  }

  private decodeError(message: string): void {
    this.counters.decodeErrors++;
    const now = this.deps.nowMs();
    if (now - this.lastDecodeLogMs < DECODE_LOG_INTERVAL_MS) return;
    this.lastDecodeLogMs = now;
    this.deps.logger.warn(`slot ${this.cacheOwnerId}: decode error (counted; logged at most once a minute): ${message}`);
  }
}
