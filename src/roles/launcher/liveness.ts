// `up`'s liveness watch (--liveness-timeout): once the stack is ready, every child that is up is
// probed about once a second (GET its liveness URL, each probe with a short deadline); a child that
// has not answered for the timeout is handed to the supervisor, which SIGKILLs it and treats the
// exit as any other. Any HTTP answer counts: liveness asks whether the process answers, not
// whether it is healthy (a frontend with no workers answers 503 and is alive).
export interface LivenessTarget {
  name: string;
  url: string;
}

/**
 * Pure bookkeeping of silence, per child name: when the current pid last answered. A new pid (a
 * restarted child) starts afresh; a gap in up's own ticks (up itself was stalled) blames nobody.
 */
export class SilenceTracker {
  private readonly last = new Map<string, { pid: number; answeredMs: number }>();

  constructor(readonly timeoutMs: number) {}

  /** The child is up as `pid` at nowMs: tracked from now on unless it already is. */
  watch(name: string, pid: number, nowMs: number): void {
    if (this.last.get(name)?.pid !== pid) this.last.set(name, { pid, answeredMs: nowMs });
  }

  /** A probe of `pid` was answered at atMs (an answer for an older pid is ignored). */
  answered(name: string, pid: number, atMs: number): void {
    const e = this.last.get(name);
    if (e?.pid === pid && atMs > e.answeredMs) e.answeredMs = atMs;
  }

  /** How long `pid` has been silent at nowMs, once that reaches the timeout; undefined before. */
  hungFor(name: string, pid: number, nowMs: number): number | undefined {
    const e = this.last.get(name);
    if (e?.pid !== pid) return undefined;
    const silent = nowMs - e.answeredMs;
    return silent >= this.timeoutMs ? silent : undefined;
  }

  forget(name: string): void {
    this.last.delete(name);
  }

  /** Nobody is blamed for silence before nowMs (up's own timers ran late). */
  excuse(nowMs: number): void {
    for (const e of this.last.values()) e.answeredMs = Math.max(e.answeredMs, nowMs);
  }
}

/** Resolves when `url` gives any HTTP answer within `deadlineMs`; rejects otherwise. */
export type LivenessProbe = (url: string, deadlineMs: number) => Promise<void>;

export const fetchLivenessProbe: LivenessProbe = async (url, deadlineMs) => {
  const res = await fetch(url, { signal: AbortSignal.timeout(deadlineMs) });
  await res.arrayBuffer();
};

export interface LivenessDeps {
  targets: readonly LivenessTarget[];
  timeoutMs: number;
  /** The child under this name that is up now (running, past its readiness gate), else undefined. */
  upChild(name: string): { pid: number } | undefined;
  /** It has been silent for `silentMs`: kill it (the supervisor's killHung). */
  hung(target: LivenessTarget, pid: number, silentMs: number): void;
  probe?: LivenessProbe;
  /** Monotonic ms. */
  now?: () => number;
}

/** Probes once a second, or twice per timeout when that is shorter; each probe's deadline is the same. */
export function probeIntervalMs(timeoutMs: number): number {
  return Math.min(1_000, timeoutMs / 2);
}

export interface LivenessWatch {
  stop(): void;
}

export function watchLiveness(deps: LivenessDeps): LivenessWatch {
  const now = deps.now ?? (() => performance.now());
  const probe = deps.probe ?? fetchLivenessProbe;
  const intervalMs = probeIntervalMs(deps.timeoutMs);
  const tracker = new SilenceTracker(deps.timeoutMs);
  const probing = new Set<string>();
  let lastTick = now();
  const tick = () => {
    const t = now();
    // A tick far later than due: up itself was stalled, so its probes could not have been answered in time.
    if (t - lastTick > 3 * intervalMs) tracker.excuse(t);
    lastTick = t;
    for (const target of deps.targets) {
      const child = deps.upChild(target.name);
      if (child === undefined) {
        tracker.forget(target.name);
        continue;
      }
      const { pid } = child;
      tracker.watch(target.name, pid, t);
      const silent = tracker.hungFor(target.name, pid, t);
      if (silent !== undefined) {
        tracker.forget(target.name);
        deps.hung(target, pid, silent);
        continue;
      }
      if (probing.has(target.name)) continue; // the last probe is still waiting for its deadline
      probing.add(target.name);
      void probe(target.url, intervalMs)
        .then(
          () => tracker.answered(target.name, pid, now()),
          () => {},
        )
        .finally(() => probing.delete(target.name));
    }
  };
  const timer = setInterval(tick, intervalMs);
  tick();
  return { stop: () => clearInterval(timer) };
}
