// Min-heap of (time, sequence, worker) for the discrete-event replay: ties pop in push order,
// which keeps a run deterministic.

export class EventHeap {
  private time: number[] = [];
  private seq: number[] = [];
  private worker: number[] = [];
  private counter = 0;

  get size(): number {
    return this.time.length;
  }

  peekTime(): number {
    return this.time.length > 0 ? this.time[0]! : Infinity;
  }

  push(timeMs: number, worker: number): void {
    const t = this.time, s = this.seq, w = this.worker;
    let i = t.length;
    t.push(timeMs);
    s.push(this.counter++);
    w.push(worker);
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!this.less(i, p)) break;
      this.swap(i, p);
      i = p;
    }
  }

  /** Pops the earliest entry's worker (check peekTime first). */
  pop(): number {
    const t = this.time, s = this.seq, w = this.worker;
    const top = w[0]!;
    const last = t.length - 1;
    t[0] = t[last]!;
    s[0] = s[last]!;
    w[0] = w[last]!;
    t.pop();
    s.pop();
    w.pop();
    let i = 0;
    const n = t.length;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < n && this.less(l, m)) m = l;
      if (r < n && this.less(r, m)) m = r;
      if (m === i) break;
      this.swap(i, m);
      i = m;
    }
    return top;
  }

  private less(a: number, b: number): boolean {
    const ta = this.time[a]!, tb = this.time[b]!;
    return ta < tb || (ta === tb && this.seq[a]! < this.seq[b]!);
  }

  private swap(a: number, b: number): void {
    const t = this.time, s = this.seq, w = this.worker;
    const ta = t[a]!, sa = s[a]!, wa = w[a]!;
    t[a] = t[b]!;
    s[a] = s[b]!;
    w[a] = w[b]!;
    t[b] = ta;
    s[b] = sa;
    w[b] = wa;
  }
}
