// Which workers are ejected from routing, and when each is probed again (pure: the clock is passed
// in; health-probe.ts does the probing). A worker is ejected after `ejectAfter` failed requests in
// a row, or at once when it is reported down (connection refused or lost, shutdown, a cut stream:
// Dynamo's report_instance_down; or a stalled request whose worker's /health did not answer). It stays out for a backoff (1 s doubling to 30 s, back to 1 s
// after a request succeeds on it) and returns only once its /health answers 200.

export const EJECT_BACKOFF_MS = { first: 1000, max: 30_000 } as const;

/**
 * Why a worker left routing: too many failures in a row, reported down at once, or a request that
 * stalled on it and a /health probe that got no answer (stall-probe.ts).
 */
export type EjectReason = "failures" | "down" | "stalled";

interface Entry {
  /** Failed requests in a row. */
  streak: number;
  /** The wait before the next probe of this ejection (or of the next one). */
  backoffMs: number;
  ejected: boolean;
  probeAtMs: number;
  probing: boolean;
}

export class WorkerHealth {
  /** Ejections so far, by reason (a counter for /metrics). */
  readonly ejections: Record<EjectReason, number> = { failures: 0, down: 0, stalled: 0 };
  private readonly entries = new Map<string, Entry>();
  private ejectedNow = 0;

  constructor(private readonly ejectAfter: number) {}

  /** Workers out of routing now. */
  get ejectedCount(): number {
    return this.ejectedNow;
  }

  isEjected(id: string): boolean {
    return this.entries.get(id)?.ejected === true;
  }

  /** A request succeeded on the worker: its failure streak and backoff start over. */
  success(id: string): void {
    const e = this.entries.get(id);
    if (e === undefined) return;
    e.streak = 0;
    e.backoffMs = EJECT_BACKOFF_MS.first;
    if (!e.ejected) this.entries.delete(id); // nothing left to remember
  }

  /** A request failed on the worker. True when this ejects it. */
  failure(id: string, nowMs: number): boolean {
    const e = this.entry(id);
    e.streak++;
    return e.streak >= this.ejectAfter && this.eject(e, nowMs, "failures");
  }

  /** The worker is down (its connection failed, it shut down, it cut a stream; or it stalled and its /health did not answer): ejected at once. True when this ejects it. */
  down(id: string, nowMs: number, reason: Exclude<EjectReason, "failures"> = "down"): boolean {
    const e = this.entry(id);
    e.streak++;
    return this.eject(e, nowMs, reason);
  }

  /** Ejected workers whose backoff is over and that are not being probed: they are now. */
  due(nowMs: number): string[] {
    const out: string[] = [];
    for (const [id, e] of this.entries) {
      if (!e.ejected || e.probing || e.probeAtMs > nowMs) continue;
      e.probing = true;
      out.push(id);
    }
    return out;
  }

  /**
   * A probe of the worker's /health ended. True when it answered 200: the worker is back in
   * routing (its next ejection waits twice as long unless a request succeeds first); otherwise it
   * stays out and is probed again after twice the wait.
   */
  probed(id: string, healthy: boolean, nowMs: number): boolean {
    const e = this.entries.get(id);
    if (e === undefined || !e.ejected) return false;
    e.probing = false;
    e.backoffMs = Math.min(e.backoffMs * 2, EJECT_BACKOFF_MS.max);
    if (!healthy) {
      e.probeAtMs = nowMs + e.backoffMs;
      return false;
    }
    e.ejected = false;
    e.streak = 0;
    this.ejectedNow--;
    return true;
  }

  /** The worker left discovery: nothing about it is kept (a new record starts afresh). */
  forget(id: string): void {
    const e = this.entries.get(id);
    if (e?.ejected) this.ejectedNow--;
    this.entries.delete(id);
  }

  /** The earliest pending probe time, or undefined when none is waiting. */
  nextProbeAtMs(): number | undefined {
    let next: number | undefined;
    for (const e of this.entries.values()) if (e.ejected && !e.probing && (next === undefined || e.probeAtMs < next)) next = e.probeAtMs;
    return next;
  }

  private entry(id: string): Entry {
    let e = this.entries.get(id);
    if (e === undefined) this.entries.set(id, (e = { streak: 0, backoffMs: EJECT_BACKOFF_MS.first, ejected: false, probeAtMs: 0, probing: false }));
    return e;
  }

  private eject(e: Entry, nowMs: number, reason: EjectReason): boolean {
    if (e.ejected) return false;
    e.ejected = true;
    e.probing = false;
    e.probeAtMs = nowMs + e.backoffMs;
    this.ejectedNow++;
    this.ejections[reason]++;
    return true;
  }
}
