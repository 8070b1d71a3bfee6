// Prefill side of Dynamo's rendezvous (protocol/dynamo/bootstrap.ts): one room per disaggregated
// request, keyed by the frontend's room id. The prefill finishing with its KV held settles the room;
// a decode that came first learns it then, one that comes later at once. A room whose prefill ends
// without its KV (cancelled) is aborted. A settled room no decode came for is forgotten after
// `retainMs` (its blocks go at the hold timeout); a decode waiting past `waitMs` learns nothing.

/** What a decode learns of its room. */
export type RoomOutcome = { kind: "held"; promptTokens: number; release: () => void } | { kind: "aborted" };

interface Room {
  outcome: RoomOutcome | undefined;
  waiting: ((o: RoomOutcome | undefined) => void)[];
  timer: ReturnType<typeof setTimeout> | undefined;
}

export class BootstrapRooms {
  private readonly rooms = new Map<bigint, Room>();

  constructor(
    private readonly waitMs: number,
    private readonly retainMs: number,
  ) {}

  get size(): number {
    return this.rooms.size;
  }

  /** A decode registered for `room`: its outcome, or undefined when the prefill did not settle in time. */
  decodeArrived(room: bigint): Promise<RoomOutcome | undefined> {
    const r = this.rooms.get(room) ?? this.open(room);
    if (r.outcome !== undefined) {
      this.drop(room, r);
      return Promise.resolve(r.outcome);
    }
    return new Promise((resolve) => {
      const settle = (o: RoomOutcome | undefined) => {
        clearTimeout(timer);
        resolve(o);
      };
      const timer = setTimeout(() => {
        r.waiting.splice(r.waiting.indexOf(settle), 1);
        if (r.waiting.length === 0) this.rooms.delete(room);
        resolve(undefined);
      }, this.waitMs);
      timer.unref?.();
      r.waiting.push(settle);
    });
  }

  /** The prefill finished with its KV held; `release` frees it once the decode has it. */
  complete(room: bigint, promptTokens: number, release: () => void): void {
    this.settle(room, { kind: "held", promptTokens, release });
  }

  /** The prefill ended without its KV. */
  abort(room: bigint): void {
    this.settle(room, { kind: "aborted" });
  }

  /** The process is closing: waiting decodes learn the abort, timers stop. */
  close(): void {
    for (const r of this.rooms.values()) {
      clearTimeout(r.timer);
      for (const w of r.waiting.splice(0)) w({ kind: "aborted" });
    }
    this.rooms.clear();
  }

  private settle(room: bigint, outcome: RoomOutcome): void {
    const r = this.rooms.get(room) ?? this.open(room);
    if (r.outcome !== undefined) return;
    r.outcome = outcome;
    if (r.waiting.length > 0) {
      // One decode per room takes the KV; a second registration for it learns of an abort.
      const [first, ...rest] = r.waiting.splice(0);
      this.drop(room, r);
      first!(outcome);
      for (const w of rest) w({ kind: "aborted" });
      return;
    }
    r.timer = setTimeout(() => this.rooms.delete(room), this.retainMs);
    r.timer.unref?.();
  }

  private open(room: bigint): Room {
    const r: Room = { outcome: undefined, waiting: [], timer: undefined };
    this.rooms.set(room, r);
    return r;
  }

  private drop(room: bigint, r: Room): void {
    clearTimeout(r.timer);
    this.rooms.delete(room);
  }
}
