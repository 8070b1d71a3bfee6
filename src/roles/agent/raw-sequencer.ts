// The raw cursor of one agent slot, pure: seq order, gaps, late joins, restarts and repairs.
// Sockets and timers stay at the edge (slot.ts); holding live batches during a repair and
// dropping the overlap after it is ReplayThenLive's (roles/replay-then-live.ts).
import { ReplayThenLive } from "../replay-then-live.ts";

export interface SequencerSink {
  /** Apply one batch; calls come in strictly increasing seq order between resyncs. */
  apply(seq: number, payload: Uint8Array, replayed: boolean): void;
  /** Clear the slot's residency (loss, publisher restart): what follows rebuilds it. */
  resync(reason: string): void;
  /** Ask the replay endpoint for every batch from `fromSeq`; the edge arms a deadline. */
  requestReplay(fromSeq: number): void;
}

export interface SequencerCounters {
  /** Live seqs above the expected one. */
  gaps: number;
  /** Batches applied from replay replies. */
  recovered: number;
  /** Batches lost for good (not in the replay buffer, no replay endpoint, decode errors). */
  dropped: number;
  /** Batches seen twice (replay/live overlap) and dropped. */
  duplicates: number;
  /** Publisher restarts (a seq lower than expected). */
  restarts: number;
  /** Replay replies outside the requested range (below its start, or past the live head), dropped. */
  replayOutOfRange: number;
}

/** Live batches held during one repair, at most (beyond: dropped, and recovered by the next repair). */
export const MAX_HELD_BATCHES = 100_000;
/**
 * How far past the newest live seq a replay reply may run (it can overtake the live stream by
 * what is in flight there); beyond it the reply is out of range.
 */
export const REPLAY_AHEAD_SLACK = 1024;

/** What became of one replay reply: `out-of-range` ones are dropped and must not extend the deadline. */
export type ReplayVerdict = "applied" | "duplicate" | "out-of-range" | "ignored";

/**
 * - seq = expected → apply.  seq > expected → gap: repair from the replay endpoint (live batches
 *   are held meanwhile and applied after it), or without one count the loss and resynchronise.
 * - first seq > 0 (late join) → back-fill from 0 the same way.  seq < expected → the publisher
 *   restarted: resynchronise (clear) before applying.  While the replayed range and the held
 *   live batches overlap, lower seqs are duplicates and dropped.
 * - a repair whose replay starts after the requested seq (the buffer no longer holds it) counts
 *   the hole as lost and rebuilds from what the buffer still holds.
 * - a replay reply below the requested seq, or more than REPLAY_AHEAD_SLACK past the newest live
 *   seq, is out of range: dropped and counted (no live seq yet, e.g. the back-fill on attach to an
 *   idle stream: no upper bound). The repair ends as usual; what it did not bring is lost.
 */
export class RawSequencer {
  readonly counters: SequencerCounters = { gaps: 0, recovered: 0, dropped: 0, duplicates: 0, restarts: 0, replayOutOfRange: 0 };
  /** Next seq expected; undefined before the first batch. */
  private expected: number | undefined;
  private readonly order = new ReplayThenLive<number, Uint8Array>(MAX_HELD_BATCHES);
  /** Next seq the running repair expects from the replay stream. */
  private replayNext = 0;
  /** The seq the running repair asked for. */
  private replayFrom = 0;
  /** The newest live seq received (held ones included); undefined before any. */
  private lastLive: number | undefined;
  /** While draining held batches after a repair, a gap is final (no repair loop on a bad buffer). */
  private draining = false;

  constructor(
    private readonly sink: SequencerSink,
    private readonly hasReplay: boolean,
  ) {}

  /** The raw cursor: the last applied seq, or -1 before any. */
  get cursor(): number {
    return this.expected === undefined ? -1 : this.expected - 1;
  }

  get isRepairing(): boolean {
    return this.order.isReplaying;
  }

  /** On attach: with a replay endpoint, back-fill from 0 at once (the stream may be idle). */
  start(): void {
    if (this.hasReplay) this.beginRepair(0);
  }

  live(seq: number, payload: Uint8Array): void {
    this.lastLive = seq;
    const verdict = this.order.live(seq, payload);
    if (verdict === "duplicate") this.counters.duplicates++;
    else if (verdict === "next") this.next(seq, payload);
  }

  /** One replayed batch (topic already checked by the edge). */
  replayed(seq: number, payload: Uint8Array): ReplayVerdict {
    if (!this.order.isReplaying) return "ignored"; // a late reply after a deadline: live covers it
    if (seq < this.replayFrom || (this.lastLive !== undefined && seq > this.lastLive + REPLAY_AHEAD_SLACK)) {
      this.counters.replayOutOfRange++;
      return "out-of-range";
    }
    if (seq < this.replayNext) {
      this.counters.duplicates++;
      return "duplicate";
    }
    if (seq > this.replayNext) {
      // The buffer starts after what we asked for: that range is gone.
      this.lose(seq - this.replayNext, `replay starts at seq ${seq}, batches ${this.replayNext}..${seq - 1} are no longer buffered`);
    }
    this.replayNext = seq + 1;
    this.expected = seq + 1;
    this.counters.recovered++;
    this.order.replayed(seq);
    this.sink.apply(seq, payload, true);
    return "applied";
  }

  /** The end marker, or the edge's deadline (`failed`): carry on with the held live batches. */
  replayEnded(): void {
    if (!this.order.isReplaying) return;
    const { next, duplicates } = this.order.end();
    this.counters.duplicates += duplicates;
    this.draining = true;
    try {
      for (const h of next) this.next(h.seq, h.item);
    } finally {
      this.draining = false;
    }
  }

  /** A batch the edge could not use (undecodable payload, its seq already consumed): lost, resynchronised. */
  lostBatch(reason: string): void {
    this.lose(1, reason);
  }

  private next(seq: number, payload: Uint8Array): void {
    const expected = this.expected;
    if (expected !== undefined && seq < expected) {
      this.counters.restarts++;
      this.sink.resync(`publisher restarted (seq ${seq} after ${expected - 1})`);
      this.expected = undefined;
    }
    if (this.expected === undefined) {
      if (seq > 0) {
        // Late join: back-fill 0..seq-1.
        if (this.hasReplay && !this.draining) return this.beginRepair(0, { seq, item: payload });
        this.lose(seq, `joined at seq ${seq} with no replay of 0..${seq - 1}`);
      }
    } else if (seq > this.expected) {
      if (!this.draining) this.counters.gaps++; // a held batch past a repair is the same gap
      if (this.hasReplay && !this.draining) return this.beginRepair(this.expected, { seq, item: payload });
      this.lose(seq - this.expected, `gap: expected seq ${this.expected}, got ${seq}`);
    }
    this.expected = seq + 1;
    this.sink.apply(seq, payload, false);
  }

  /** `first`: the live batch that revealed the hole, applied after the repair. */
  private beginRepair(from: number, first?: { seq: number; item: Uint8Array }): void {
    this.order.begin(first);
    this.replayNext = from;
    this.replayFrom = from;
    this.sink.requestReplay(from);
  }

  private lose(batches: number, reason: string): void {
    this.counters.dropped += batches;
    this.sink.resync(reason);
  }
}
