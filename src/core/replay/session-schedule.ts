// When each turn of a session workload is due: a session's first turn at its start time (while
// fewer than maxSessions are open), each later turn `delay` after the turn it waits for finished.
// A turn that failed takes the turns that wait on it with it (they are never sent). One clock for
// both users: replay's virtual clock and bench's wall clock (ms from the run's start).
import type { WorkloadRequest } from "../workload/workload.ts";
import { EventHeap } from "./event-heap.ts";

export class SessionSchedule {
  private readonly due = new EventHeap();
  /** First turns in start order, waiting until fewer than maxSessions are open. */
  private readonly roots: number[];
  private rootHead = 0;
  private readonly rootMs: Float64Array;
  private readonly children: number[][];
  /** Turns of each session not yet finished or cancelled. */
  private readonly remaining: Int32Array;
  private open = 0;
  /** When an open session last ended: a waiting first turn cannot be due before it. */
  private freedMs = 0;

  /** `startMs[i]` is first turn i's start (other entries unread). */
  constructor(private readonly workload: readonly WorkloadRequest[], startMs: Float64Array, private readonly maxSessions = Infinity) {
    const n = workload.length;
    this.rootMs = startMs;
    this.children = Array.from({ length: n }, () => []);
    let sessions = 0;
    for (const r of workload) sessions = Math.max(sessions, (r.session?.session ?? -1) + 1);
    this.remaining = new Int32Array(sessions);
    const roots: number[] = [];
    for (let i = 0; i < n; i++) {
      const link = workload[i]!.session;
      if (link === undefined) throw new Error(`request ${i} is not a session turn`);
      this.remaining[link.session]!++;
      if (link.previous < 0) roots.push(i);
      else this.children[link.previous]!.push(i);
    }
    this.roots = roots.sort((a, b) => startMs[a]! - startMs[b]! || a - b);
  }

  /** Sessions open now (first turn sent, a turn not yet finished). */
  get openSessions(): number {
    return this.open;
  }

  /** When the next turn is due (Infinity: none until a turn finishes). */
  peekMs(): number {
    const root = this.rootHead < this.roots.length && this.open < this.maxSessions ? Math.max(this.rootMs[this.roots[this.rootHead]!]!, this.freedMs) : Infinity;
    return Math.min(root, this.due.peekTime());
  }

  /** The next due turn (call when peekMs() is finite); a first turn opens its session. */
  pop(): number {
    const root = this.rootHead < this.roots.length && this.open < this.maxSessions ? Math.max(this.rootMs[this.roots[this.rootHead]!]!, this.freedMs) : Infinity;
    // Ties go to later turns: an open session's next turn before a new session.
    if (this.due.peekTime() <= root) return this.due.pop();
    this.open++;
    return this.roots[this.rootHead++]!;
  }

  /**
   * Turn i ended at tMs; ok: its waiting turns become due after their delays, else they are
   * cancelled. Returns the cancelled turns (never to be sent).
   */
  finished(i: number, tMs: number, ok: boolean): number[] {
    const cancelled: number[] = [];
    const stack = [...this.children[i]!];
    if (ok) for (const c of stack.splice(0)) this.due.push(tMs + this.workload[c]!.session!.delayMs, c);
    while (stack.length > 0) {
      const c = stack.pop()!;
      cancelled.push(c);
      stack.push(...this.children[c]!);
    }
    const s = this.workload[i]!.session!.session;
    this.remaining[s]! -= 1 + cancelled.length;
    if (this.remaining[s] === 0) {
      this.open--;
      this.freedMs = tMs;
    }
    return cancelled;
  }
}
