// The load client's own event-loop lag during a run: a timer due every TICK_MS notes how late it
// fires (and, when stopped, how late the tick still pending is: a loop too busy to run timers at
// all is the worst lag, not none). A late timer means chunks were also read late, so measured TTFT
// and ITL include the client's own stalls (GC, a busy loop, an overloaded core), not only the
// server's. Also the client's CPU time over the run: near one core, the client is saturated.
import { percentile } from "../../core/replay/stats.ts";

export const TICK_MS = 5;
/** Below this a timer's lateness is scheduler granularity, not a stall. */
export const LAG_FLOOR_MS = 1;
/** At this p99 lag the figures are distorted whatever the ITL. */
export const LAG_CEILING_MS = 5;
/** Otherwise: p99 lag above this share of the median ITL distorts ITL. */
export const LAG_ITL_SHARE = 0.1;

export interface LagSummary {
  samples: number;
  p50_ms: number;
  p99_ms: number;
  max_ms: number;
  /** p99 above this distorts ITL: 10 % of the median ITL, within [1, 5] ms. */
  threshold_ms: number;
  distorts_itl: boolean;
}

export interface LagMonitor {
  /** Stops measuring (the timer and the CPU time), so work done after the run is not counted. */
  end(): void;
  /** Ends if not ended; the summary is judged against the run's median ITL (ms; NaN or 0 when none). */
  stop(medianItlMs: number): LagSummary;
  /** Ends if not ended; CPU time this process used while measuring, as a share of one core over the wall time (1 = a whole core). */
  cpuShare(): number;
}

/** At this share of a core the client is saturated: requests and chunks wait for it. */
export const CPU_SATURATED_SHARE = 0.9;

export function monitorEventLoopLag(now: () => number = () => performance.now(), cpuUsage: () => { user: number; system: number } = () => process.cpuUsage()): LagMonitor {
  const lags: number[] = [];
  const startedMs = now();
  const cpu0 = cpuUsage();
  let ended: { cpuShare: number } | undefined;
  let due = now() + TICK_MS;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const tick = () => {
    const t = now();
    lags.push(Math.max(0, t - due));
    due = t + TICK_MS;
    timer = setTimeout(tick, TICK_MS);
    timer.unref?.();
  };
  timer = setTimeout(tick, TICK_MS);
  timer.unref?.();
  const end = () => {
    if (ended) return ended;
    clearTimeout(timer);
    // The tick still due: if the loop never got to it, that wait is the run's longest stall.
    const pending = now() - due;
    if (pending > 0) lags.push(pending);
    const cpu = cpuUsage();
    const wallMs = now() - startedMs;
    ended = { cpuShare: wallMs > 0 ? (cpu.user - cpu0.user + cpu.system - cpu0.system) / 1000 / wallMs : 0 };
    return ended;
  };
  return {
    end: () => void end(),
    stop(medianItlMs) {
      end();
      return judgeLag(lags, medianItlMs);
    },
    cpuShare: () => end().cpuShare,
  };
}

/** Summary of lag samples (ms) against the threshold for this median ITL. */
export function judgeLag(lags: readonly number[], medianItlMs: number): LagSummary {
  const xs = Float64Array.from(lags);
  const p99 = xs.length > 0 ? percentile(xs, 99) : 0;
  const threshold = Number.isFinite(medianItlMs) && medianItlMs > 0 ? Math.min(LAG_CEILING_MS, Math.max(LAG_FLOOR_MS, LAG_ITL_SHARE * medianItlMs)) : LAG_CEILING_MS;
  return {
    samples: xs.length,
    p50_ms: xs.length > 0 ? percentile(xs, 50) : 0,
    p99_ms: p99,
    max_ms: xs.reduce((a, b) => Math.max(a, b), 0),
    threshold_ms: threshold,
    distorts_itl: p99 > threshold,
  };
}

export function lagWarning(s: LagSummary): string | undefined {
  if (!s.distorts_itl) return undefined;
  return `the load client's event loop lagged (p99 ${s.p99_ms.toFixed(1)} ms, max ${s.max_ms.toFixed(1)} ms, over the ${s.threshold_ms.toFixed(1)} ms that distorts ITL): measured TTFT and ITL include the client's own stalls; use fewer requests in flight, a less busy machine, or several bench processes`;
}

export function saturationWarning(cpuShare: number): string | undefined {
  if (!(cpuShare >= CPU_SATURATED_SHARE)) return undefined;
  return `the load client used ${(cpuShare * 100).toFixed(0)} % of a CPU core: it was saturated, so requests and chunks waited for it and its latencies include that wait; use fewer requests in flight or several bench processes`;
}
