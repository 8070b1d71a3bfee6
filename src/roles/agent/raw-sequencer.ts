// The raw cursor of one agent slot, pure: seq order, gaps, late joins, restarts, repairs and
// state dumps. Sockets, HTTP and timers stay at the edge (slot.ts); holding live batches during a
// repair or a dump and dropping the overlap after it is ReplayThenLive's (protocol/kv-events/replay-then-live.ts).
import { ReplayThenLive } from "../../protocol/kv-events/replay-then-live.ts";

export interface SequencerSink {
  /** Apply one batch; calls come in strictly increasing seq order between resyncs. */
  apply(seq: number, payload: Uint8Array, replayed: boolean): void;
  /** Clear the slot's residency (loss, publisher restart): what follows rebuilds it. */
  resync(reason: string): void;
  /** Ask the replay endpoint for every batch from `fromSeq`; the edge arms a deadline. */
  requestReplay(fromSeq: number): void;
  /** Fetch the publisher's state dump; the edge answers with dumpArrived or dumpFailed. */
  requestDump(): void;
  /** Replace the residency with the dump's (reflecting seqs ≤ `seq`); a string is why it could not be used. */
  applyDump(seq: number, payload: Uint8Array): string | undefined;
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
  /** State dumps applied (each ends a degraded period). */
  dumpsApplied: number;
  /** State dumps asked for that could not be fetched or used. */
  dumpsFailed: number;
}

export const NO_SEQUENCER_COUNTERS: Readonly<SequencerCounters> = Object.freeze({ gaps: 0, recovered: 0, dropped: 0, duplicates: 0, restarts: 0, replayOutOfRange: 0, dumpsApplied: 0, dumpsFailed: 0 });

export function addSequencerCounters(into: SequencerCounters, c: Readonly<SequencerCounters>): void {
  for (const k of Object.keys(into) as (keyof SequencerCounters)[]) into[k] += c[k];
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
 *   the hole as lost; with a state dump the repair becomes the dump, without one the slot
 *   rebuilds from what the buffer still holds.
 * - a replay reply below the requested seq, or more than REPLAY_AHEAD_SLACK past the newest live
 *   seq, is out of range: dropped and counted (no live seq yet, e.g. the back-fill on attach to an
 *   idle stream: no upper bound). The repair ends as usual; what it did not bring is lost.
 * - a loss (a hole replay cannot fill, no replay endpoint, an unusable batch) leaves the slot
 *   `degraded`: with a state dump (`hasDump`) live batches are held, the dump replaces the
 *   residency and the held batches after its seq follow; without one the slot fills from live
 *   and stays degraded until a publisher restart from seq 0 or a dump.
 */
export class RawSequencer {
  readonly counters: SequencerCounters = { ...NO_SEQUENCER_COUNTERS };
  /** The residency may miss blocks (a loss since the last complete state) and says so. */
  degraded = false;
  /** A loss during a dump: another dump once this one is applied (drain() asks). */
  private dumpWanted = false;
  /** The hold of `order` is for a dump, not a replay (replay replies are ignored meanwhile). */
  private dumping = false;
  /** After a failed dump: the next batch starts the cursor again, whatever its seq. */
  private fillFromLive = false;
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
    private readonly hasDump = false,
  ) {}

  /** The raw cursor: the last applied seq, or -1 before any. */
  get cursor(): number {
    return this.expected === undefined ? -1 : this.expected - 1;
  }

  /** Back-filling from replay (not a dump). */
  get isRepairing(): boolean {
    return this.order.isReplaying && !this.dumping;
  }

  /** Waiting for a state dump (live batches held). */
  get isDumping(): boolean {
    return this.dumping;
  }

  /**
   * On attach, at once (the stream may be idle, so no late join would show): with a replay
   * endpoint back-fill from 0; else with a state dump load it (degraded until it is applied).
   */
  start(): void {
    if (this.hasReplay) this.beginRepair(0);
    else if (this.hasDump) {
      this.degraded = true;
      this.beginDump();
    }
  }

  live(seq: number, payload: Uint8Array): void {
    this.lastLive = seq;
    const verdict = this.order.live(seq, payload);
    if (verdict === "duplicate") this.counters.duplicates++;
    else if (verdict === "next") this.next(seq, payload);
  }

  /** One replayed batch (topic already checked by the edge). */
  replayed(seq: number, payload: Uint8Array): ReplayVerdict {
    if (!this.isRepairing) return "ignored"; // a late reply after a deadline (live covers it), or during a dump
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
      if (this.dumping) return "ignored"; // the dump rebuilds everything
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
    if (!this.isRepairing) return;
    this.drain();
  }

  /** The dump the edge fetched: it replaces the residency; held live batches after `seq` follow. */
  dumpArrived(seq: number, payload: Uint8Array): void {
    if (!this.dumping) return;
    const problem = this.sink.applyDump(seq, payload);
    if (problem !== undefined) return this.dumpFailed(problem);
    this.counters.dumpsApplied++;
    this.degraded = false;
    this.fillFromLive = false;
    this.expected = seq + 1;
    if (seq >= 0) this.order.replayed(seq);
    this.dumping = false;
    this.drain();
  }

  /**
   * The dump could not be had (HTTP error, too big, undecodable): the held batches go on the
   * cleared residency, the slot stays degraded, and the edge may retry (retryDump) later.
   */
  dumpFailed(reason: string): void {
    if (!this.dumping) return;
    this.counters.dumpsFailed++;
    this.dumping = false;
    this.sink.resync(`state dump failed: ${reason}`);
    // Fill from live: the next batch is taken as the new start (the loss is already counted).
    this.expected = undefined;
    this.fillFromLive = true;
    this.drain();
  }

  /** Ask for a dump again (after a failed one) if the slot is still degraded. */
  retryDump(): void {
    if (!this.hasDump || !this.degraded || this.dumping) return;
    // During a replay repair the dump waits for it to end (drain() asks), rather than being dropped.
    if (this.order.isReplaying) this.dumpWanted = true;
    else this.beginDump();
  }

  /** Ends the hold (repair or dump) and processes the held live batches; a loss among them is final. */
  private drain(): void {
    const { next, duplicates } = this.order.end();
    this.counters.duplicates += duplicates;
    this.draining = true;
    try {
      for (const h of next) {
        // A loss while draining may start a dump: the rest is held for it.
        if (this.order.isReplaying) this.order.live(h.seq, h.item);
        else this.next(h.seq, h.item);
      }
    } finally {
      this.draining = false;
    }
    if (this.dumpWanted && !this.order.isReplaying) this.beginDump();
  }

  /** A batch the edge could not use (undecodable payload, its seq already consumed): lost, resynchronised. */
  lostBatch(reason: string): void {
    this.lose(1, reason);
  }

  private next(seq: number, payload: Uint8Array): void {
    if (this.fillFromLive) {
      this.fillFromLive = false;
      this.expected = seq;
    }
    const expected = this.expected;
    if (expected !== undefined && seq < expected) {
      this.counters.restarts++;
      this.sink.resync(`publisher restarted (seq ${seq} after ${expected - 1})`);
      this.expected = undefined;
      // A publisher that starts again from 0 is seen whole: nothing is missing any more.
      this.degraded = false;
      this.dumpWanted = false;
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
    // The loss started a dump: this batch waits for it like any live one (dropped if it covers it).
    if (this.dumping) {
      this.order.live(seq, payload);
      return;
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
    this.degraded = true;
    this.sink.resync(reason);
    if (!this.hasDump) return;
    if (this.dumping) {
      this.dumpWanted = true; // another dump after this one (drain() asks)
      return;
    }
    if (this.order.isReplaying) {
      // The running repair becomes the dump: its hold is kept, its remaining replies ignored.
      this.dumping = true;
      this.sink.requestDump();
      return;
    }
    this.beginDump();
  }

  private beginDump(): void {
    this.dumpWanted = false;
    this.dumping = true;
    this.order.begin();
    this.sink.requestDump();
  }
}
