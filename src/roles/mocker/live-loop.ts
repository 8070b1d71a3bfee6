// Drives many engines on real time with ONE timer: a min-heap of (due time, engine). An engine
// step computed at time T with duration d has its results delivered at T + d, when the engine
// steps again. Rounds whose entries are already due (durations of 0 at speedup 0, or a backlog)
// run back to back for up to `turnBudgetMs` of wall time, then the loop yields to I/O via
// setImmediate: a request's tokens of several steps then leave in one socket write instead of one
// write per token (a loopback write costs 10–20 µs; the engine spends ~0.4 µs per token).
// A busy engine's next step starts at its intended due time, not when the timer happened to fire,
// so timer lateness does not add up: simulated time stays on the engine's clock (vLLM's steps
// follow each other back to back). Only a loop more than `maxLagMs` behind gives up that lag.

/** One engine the loop drives (the mocker's RankEngine; a fake in tests). */
export interface LoopEngine<R> {
  /** True while the engine has queued or running requests. */
  hasWork(): boolean;
  /**
   * Runs one engine step at `nowMs`; returns its results and simulated duration. `idle` marks a
   * step that computed nothing and only waits (for a host transfer to land): new work cuts it short.
   */
  step(nowMs: number): { durationMs: number; result: R; idle?: boolean };
  /** Receives a step's results once its duration has passed. */
  deliver(result: R): void;
}

interface Entry<R> {
  engine: LoopEngine<R>;
  dueMs: number;
  pending: R | undefined;
  scheduled: boolean;
  /** Waiting on a transfer without computing: a wake moves it to now. */
  idle: boolean;
  /** Position in the heap while scheduled (kept by every sift, for decrease-key). */
  heapIndex: number;
}

export interface LiveLoopOptions {
  /**
   * Wall-clock ms a turn may keep running due rounds before yielding to I/O (0 = one round per
   * turn). It bounds how long new requests and socket writes wait behind the engines.
   */
  turnBudgetMs?: number;
  /** Wall clock for the turn budget; default performance.now (the loop's `now` may be virtual). */
  wallMs?: () => number;
  /**
   * How far behind its clock the loop may run steps to catch up (an overloaded or paused
   * process); a step later than that starts `maxLagMs` before now and the rest is dropped.
   */
  maxLagMs?: number;
}

/** 1 s: far above timer lateness (≈ 1 ms) and GC pauses, small enough not to replay a stall. */
export const DEFAULT_MAX_LAG_MS = 1000;

/**
 * 5 ms: at speedup 0 a stream then gets ~25 tokens per write (bench/mocker-stream.ts) and I/O
 * still runs at least 200 times a second. At speedup > 0 a turn rarely finds more rounds due.
 */
export const DEFAULT_TURN_BUDGET_MS = 5;

export class LiveLoop<R> {
  private readonly heap: Entry<R>[] = [];
  private readonly entries = new Map<LoopEngine<R>, Entry<R>>();
  /** Scratch list of one round's due entries, reused (a round runs thousands of times a second). */
  private readonly due: Entry<R>[] = [];
  private timer: ReturnType<typeof setTimeout> | undefined;
  private immediate: ReturnType<typeof setImmediate> | undefined;
  private armedForMs = Infinity;
  private closed = false;

  private readonly turnBudgetMs: number;
  private readonly wallMs: () => number;
  private readonly maxLagMs: number;
  /** Loop time given up because steps ran more than maxLagMs late (0 when the loop keeps up). */
  droppedLagMs = 0;

  constructor(
    private readonly now: () => number,
    opts: LiveLoopOptions = {},
  ) {
    this.turnBudgetMs = opts.turnBudgetMs ?? DEFAULT_TURN_BUDGET_MS;
    this.wallMs = opts.wallMs ?? (() => performance.now());
    this.maxLagMs = opts.maxLagMs ?? DEFAULT_MAX_LAG_MS;
  }

  /**
   * A request arrived at `engine`: make sure it steps now if it is idle, or waiting on a host
   * transfer (the new request must not queue behind a copy it does not need). An engine that is
   * computing keeps its due time: the request joins its next step, as in vLLM.
   */
  wake(engine: LoopEngine<R>): void {
    if (this.closed) return;
    let e = this.entries.get(engine);
    if (!e) {
      e = { engine, dueMs: 0, pending: undefined, scheduled: false, idle: false, heapIndex: -1 };
      this.entries.set(engine, e);
    }
    const now = this.now();
    if (!e.scheduled) {
      e.dueMs = now;
      this.push(e);
    } else if (e.idle && e.dueMs > now) {
      e.idle = false;
      e.dueMs = now;
      this.siftUp(e.heapIndex);
    } else {
      return;
    }
    this.arm();
  }

  close(): void {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    if (this.immediate) clearImmediate(this.immediate);
    this.timer = this.immediate = undefined;
    this.heap.length = 0;
  }

  private run = (): void => {
    this.timer = this.immediate = undefined;
    this.armedForMs = Infinity;
    if (this.closed) return;
    const turnEnd = this.wallMs() + this.turnBudgetMs;
    do {
      if (!this.round()) return;
    } while (this.heap.length > 0 && this.heap[0]!.dueMs <= this.now() && this.wallMs() < turnEnd);
    this.arm();
  };

  /** One round: every entry due by now delivers and steps once. False once closed. */
  private round(): boolean {
    const now = this.now();
    // Take every entry due by now; entries re-scheduled during this round wait for the next one.
    const due = this.due;
    while (this.heap.length > 0 && this.heap[0]!.dueMs <= now) due.push(this.pop()!);
    try {
      for (const e of due) {
        e.scheduled = false;
        if (e.pending !== undefined) {
          const r = e.pending;
          e.pending = undefined;
          e.engine.deliver(r);
        }
        if (this.closed) return false;
        if (e.engine.hasWork()) {
          // From the intended due time (a wake sets it to the wake's now), not from `now`.
          let at = e.dueMs;
          if (now - at > this.maxLagMs) {
            this.droppedLagMs += now - this.maxLagMs - at;
            at = now - this.maxLagMs;
          }
          const { durationMs, result, idle } = e.engine.step(at);
          e.pending = result;
          e.idle = idle === true;
          e.dueMs = at + durationMs;
          this.push(e);
        }
      }
    } finally {
      due.length = 0;
    }
    return true;
  }

  private arm(): void {
    if (this.closed || this.heap.length === 0) return;
    const next = this.heap[0]!.dueMs;
    if (next >= this.armedForMs) return;
    if (this.timer) clearTimeout(this.timer);
    if (this.immediate) clearImmediate(this.immediate);
    this.timer = this.immediate = undefined;
    this.armedForMs = next;
    const delay = next - this.now();
    if (delay < 1) this.immediate = setImmediate(this.run);
    // setTimeout fires after 1 ms for delays past 2^31−1 ms (huge --prefill-ms or a tiny
    // --speedup-ratio): wait the longest it allows; the run re-arms if the entry is not due yet.
    else this.timer = setTimeout(this.run, Math.min(delay, 2 ** 31 - 1));
  }

  private push(e: Entry<R>): void {
    e.scheduled = true;
    e.heapIndex = this.heap.push(e) - 1;
    this.siftUp(e.heapIndex);
  }

  /** Moves the entry at `i` up to its place (after a push, or after its due time got earlier). */
  private siftUp(i: number): void {
    const h = this.heap;
    const e = h[i]!;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (h[parent]!.dueMs <= e.dueMs) break;
      h[i] = h[parent]!;
      h[i]!.heapIndex = i;
      i = parent;
    }
    h[i] = e;
    e.heapIndex = i;
  }

  private pop(): Entry<R> | undefined {
    const h = this.heap;
    const top = h[0];
    const last = h.pop();
    if (top) top.heapIndex = -1;
    if (h.length === 0 || last === undefined) return top;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= h.length) break;
      const r = l + 1;
      const c = r < h.length && h[r]!.dueMs < h[l]!.dueMs ? r : l;
      if (h[c]!.dueMs >= last.dueMs) break;
      h[i] = h[c]!;
      h[i]!.heapIndex = i;
      i = c;
    }
    h[i] = last;
    last.heapIndex = i;
    return top;
  }
}
