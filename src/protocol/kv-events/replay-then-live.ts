// "Replay first, hold live batches, drop the overlap": the ordering both raw-stream readers (the
// agent's slots, the `events` tap) put around a replay. Pure: seqs in, verdicts and held batches
// out; what a gap or a restart means stays with the caller.

export type LiveVerdict = "held" | "duplicate" | "next";

export interface HeldBatch<S, T> {
  seq: S;
  item: T;
}

export class ReplayThenLive<S extends number | bigint, T> {
  private replaying = false;
  private held: HeldBatch<S, T>[] = [];
  /** Live batches refused while the hold was full, since the last end(). */
  private refused = 0;
  /** Highest seq applied from the running (or last) replay. */
  private replayedUpTo: S | undefined;
  /** After a replay: live seqs it covered are duplicates until one passes it. */
  private overlap = false;
  /** The last live seq seen (held or refused ones included). */
  private lastLive: S | undefined;

  /** `maxHeld`: live batches held during one replay, at most. */
  constructor(private readonly maxHeld: number) {}

  get isReplaying(): boolean {
    return this.replaying;
  }

  /** A replay starts; `first` (a live batch the caller already took, e.g. the one past a gap) is held first. */
  begin(first?: HeldBatch<S, T>): void {
    this.replaying = true;
    this.replayedUpTo = undefined;
    this.overlap = false;
    if (first) this.held.push(first);
  }

  /** A replayed batch was applied; nothing while no replay runs (a late reply). */
  replayed(seq: S): void {
    if (this.replaying && (this.replayedUpTo === undefined || seq > this.replayedUpTo)) this.replayedUpTo = seq;
  }

  /** A live batch: held during a replay, a duplicate of a replayed one, or the caller's to process next. */
  live(seq: S, item: T): LiveVerdict {
    const previous = this.lastLive;
    this.lastLive = seq;
    if (this.replaying) {
      if (this.held.length < this.maxHeld) this.held.push({ seq, item });
      else this.refused++;
      return "held";
    }
    return this.duplicate(seq, previous) ? "duplicate" : "next";
  }

  /**
   * The replay is over (end marker, or the caller's deadline): the held live batches to process
   * now in arrival order, without the ones the replay covered (`duplicates`), and how many the
   * full hold refused (`refused`: lost to this replay).
   */
  end(): { next: HeldBatch<S, T>[]; duplicates: number; refused: number } {
    this.replaying = false;
    this.overlap = this.replayedUpTo !== undefined;
    const held = this.held;
    const refused = this.refused;
    this.held = [];
    this.refused = 0;
    const next: HeldBatch<S, T>[] = [];
    let duplicates = 0;
    let previous: S | undefined;
    for (const h of held) {
      if (this.duplicate(h.seq, previous)) duplicates++;
      else next.push(h);
      previous = h.seq;
    }
    return { next, duplicates, refused };
  }

  /**
   * While the overlap lasts a live seq the replay covered is a duplicate; but one publisher's live
   * seqs only grow, so one at or below the previous live seq means it restarted: the overlap ends.
   */
  private duplicate(seq: S, previousLive: S | undefined): boolean {
    if (!this.overlap) return false;
    if (seq <= this.replayedUpTo! && (previousLive === undefined || seq > previousLive)) return true;
    this.overlap = false;
    return false;
  }
}
