// Drives many engines on real time with ONE timer: a min-heap of (due time, engine). An engine
// step computed at time T with duration d has its results delivered at T + d, when the engine
// steps again. With durations of 0 (speedup 0) each round yields to I/O via setImmediate, so the
// HTTP server and sockets keep up while engines run as fast as possible.

export interface LoopSlot<R> {
  /** True while the engine has queued or running requests. */
  hasWork(): boolean;
  /** Runs one engine step at `nowMs`; returns its results and simulated duration. */
  step(nowMs: number): { durationMs: number; result: R };
  /** Receives a step's results once its duration has passed. */
  deliver(result: R): void;
}

interface Entry<R> {
  slot: LoopSlot<R>;
  dueMs: number;
  pending: R | undefined;
  scheduled: boolean;
}

export class LiveLoop<R> {
  private readonly heap: Entry<R>[] = [];
  private readonly entries = new Map<LoopSlot<R>, Entry<R>>();
  private timer: ReturnType<typeof setTimeout> | undefined;
  private immediate: ReturnType<typeof setImmediate> | undefined;
  private armedForMs = Infinity;
  private closed = false;

  constructor(private readonly now: () => number) {}

  /** A request arrived at `slot`: make sure it steps (now, if idle). */
  wake(slot: LoopSlot<R>): void {
    if (this.closed) return;
    let e = this.entries.get(slot);
    if (!e) {
      e = { slot, dueMs: 0, pending: undefined, scheduled: false };
      this.entries.set(slot, e);
    }
    if (e.scheduled) return;
    e.dueMs = this.now();
    this.push(e);
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
    const now = this.now();
    // Take every entry due by now; entries re-scheduled during this round wait for the next one.
    const due: Entry<R>[] = [];
    while (this.heap.length > 0 && this.heap[0]!.dueMs <= now) due.push(this.pop()!);
    for (const e of due) {
      e.scheduled = false;
      if (e.pending !== undefined) {
        const r = e.pending;
        e.pending = undefined;
        e.slot.deliver(r);
      }
      if (this.closed) return;
      if (e.slot.hasWork()) {
        const { durationMs, result } = e.slot.step(now);
        e.pending = result;
        e.dueMs = now + durationMs;
        this.push(e);
      }
    }
    this.arm();
  };

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
    else this.timer = setTimeout(this.run, delay);
  }

  private push(e: Entry<R>): void {
    e.scheduled = true;
    const h = this.heap;
    let i = h.push(e) - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (h[parent]!.dueMs <= e.dueMs) break;
      h[i] = h[parent]!;
      i = parent;
    }
    h[i] = e;
  }

  private pop(): Entry<R> | undefined {
    const h = this.heap;
    const top = h[0];
    const last = h.pop();
    if (h.length === 0 || last === undefined) return top;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= h.length) break;
      const r = l + 1;
      const c = r < h.length && h[r]!.dueMs < h[l]!.dueMs ? r : l;
      if (h[c]!.dueMs >= last.dueMs) break;
      h[i] = h[c]!;
      i = c;
    }
    h[i] = last;
    return top;
  }
}
