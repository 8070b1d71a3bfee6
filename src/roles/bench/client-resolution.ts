// Which latency figures the load client could not resolve, and why: a figure no larger than the
// client's own event-loop lag (p99) is the client's stall as much as the server's latency, and
// ITL percentiles that fall among gaps read in one network read (tokens the client saw at once)
// say nothing of the server's spacing. Such figures are printed as the reason, not a number (the
// JSON keeps vLLM's numeric keys and lists them under unresolved_figures). Per-request averages
// (TPOT, mean ITL) spread the lag over a request's gaps, so they resolve finer.
import { METRICS, percentileKey, type Metric } from "./metrics.ts";
import type { LagSummary } from "./event-loop-lag.ts";

/** What a run's result says about its load client (the JSON's client_* keys and unresolved_figures). */
export interface ClientFigures {
  client_event_loop_lag?: LagSummary;
  /** The client's CPU time over the run as a share of one core. */
  client_cpu_share?: number;
  itl_same_read_share?: number;
  unresolved_figures?: Record<string, string>;
}

/** The load client's rows, printed beside the latencies they can distort. */
export function clientRows(r: ClientFigures): [string, string][] {
  const rows: [string, string][] = [];
  const lag = r.client_event_loop_lag;
  if (lag) rows.push(["Event-loop lag p50 / p99 / max (ms)", `${lag.p50_ms.toFixed(1)} / ${lag.p99_ms.toFixed(1)} / ${lag.max_ms.toFixed(1)}`]);
  if (r.client_cpu_share !== undefined) rows.push(["CPU used (share of one core)", `${(r.client_cpu_share * 100).toFixed(0)} %`]);
  if (r.itl_same_read_share !== undefined) rows.push(["Tokens read at once (share)", `${(r.itl_same_read_share * 100).toFixed(1)} %`]);
  return rows;
}

export interface ClientTiming {
  lag?: Pick<LagSummary, "p99_ms">;
  /** Share of ITL gaps whose token arrived in the same read as the one before (0–1). */
  sameReadShare: number;
  /** Mean ITL gaps per completed request. */
  gapsPerRequest: number;
}

export type Stat = "mean" | "median" | number;

/** Why `value`, the `stat` (mean, median or a percentile) of `metric`, is not something the client could time; undefined when it is. */
export function whyUnresolved(metric: Metric, stat: Stat, value: number, t: ClientTiming): string | undefined {
  const q = stat === "median" ? 50 : typeof stat === "number" ? stat : undefined;
  if (metric === "itl" && q !== undefined && t.sameReadShare > 0 && t.sameReadShare * 100 >= q) {
    return `${(t.sameReadShare * 100).toFixed(0)} % of tokens arrived in the same network read as the one before`;
  }
  const lagMs = t.lag?.p99_ms ?? 0;
  // An average over a request's gaps carries the lag once per request, not once per gap.
  const perGap = metric === "tpot" || (metric === "itl" && stat === "mean");
  const resolution = perGap ? lagMs / Math.max(1, t.gapsPerRequest) : lagMs;
  if (!(value <= resolution)) return undefined;
  if (lagMs === 0 && value > 0) return undefined;
  const why = `below the load client's own event-loop lag (p99 ${lagMs.toFixed(1)} ms)`;
  return perGap ? `${why} spread over ${t.gapsPerRequest.toFixed(0)} gaps per request` : why;
}

/** figure key → reason, for every mean, median and percentile of the result the client could not resolve. */
export function unresolvedFigures(result: object, t: ClientTiming, percentiles: readonly number[]): Record<string, string> {
  const out: Record<string, string> = {};
  const r = result as Record<string, unknown>;
  if (r.completed === 0) return out;
  for (const m of METRICS) {
    const stats: [string, Stat][] = [[`mean_${m}_ms`, "mean"], [`median_${m}_ms`, "median"], ...percentiles.map((q): [string, Stat] => [percentileKey(q, m), q])];
    for (const [key, stat] of stats) {
      const v = r[key];
      if (typeof v !== "number") continue;
      const why = whyUnresolved(m, stat, v, t);
      if (why !== undefined) out[key] = why;
    }
  }
  return out;
}

/** What an unresolved figure prints in a table cell instead of its number. */
export function unresolvedCell(reason: string): string {
  return /same network read/.test(reason) ? "unresolved (read at once)" : "unresolved (client lag)";
}
