// The rounds of a comparison, grouped and pooled: each side (a router mode, a concurrency point)
// is the runs with its label; its table figures are computed over all its rounds' requests as if
// the rounds ran back to back; its verdict samples are each round's completed requests. Also what
// the client could resolve, over one run or a side's rounds.
import type { RequestSample, RoundSamples, SideSamples } from "../../core/stats/run-samples.ts";
import type { ClientTiming } from "./client-resolution.ts";
import type { LoadResult, TimedRecord } from "./drive-load.ts";
import type { LagSummary } from "./event-loop-lag.ts";
import { unresolvedFigures } from "./client-resolution.ts";
import { buildResult } from "./metrics.ts";
import type { MeasuredRun, ObservedResult } from "./bench-types.ts";

/** The completed requests of one run, as the verdict resamples them. */
export function samplesOf(records: readonly TimedRecord[], durationS: number): RoundSamples {
  const requests: RequestSample[] = [];
  for (const r of records) {
    if (!r.ok) continue;
    let itl = 0;
    for (const g of r.itlMs) itl += g;
    requests.push({ ttftMs: r.ttftMs, e2elMs: r.e2elMs, outputTokens: r.outputTokens, itlSumMs: itl, itlCount: r.itlMs.length, promptTokens: r.promptTokens, cachedTokens: r.cachedTokens ?? NaN });
  }
  return { requests, durationS };
}

/** Runs grouped by label, sides in the order they first ran, rounds in order. */
export function sidesOf(runs: readonly MeasuredRun[]): { label: string; runs: MeasuredRun[] }[] {
  const sides = new Map<string, MeasuredRun[]>();
  for (const r of runs) sides.set(r.label, [...(sides.get(r.label) ?? []), r]);
  return [...sides].map(([label, rs]) => ({ label, runs: rs.sort((a, b) => a.round - b.round) }));
}

export function sideSamples(side: { label: string; runs: readonly MeasuredRun[] }): SideSamples {
  return { label: side.label, rounds: side.runs.map((r) => samplesOf(r.records, r.result.duration)) };
}

/** Lag, reads and gaps of these records: what sets the finest latency the client could time. */
export function clientTimingOf(records: readonly TimedRecord[], lag: Pick<LagSummary, "p99_ms"> | undefined): ClientTiming {
  let gaps = 0;
  let sameRead = 0;
  let completed = 0;
  for (const r of records) {
    if (!r.ok) continue;
    completed++;
    gaps += r.itlMs.length;
    sameRead += r.itlSameRead ?? 0;
  }
  return { lag, sameReadShare: gaps > 0 ? sameRead / gaps : 0, gapsPerRequest: completed > 0 ? gaps / completed : 0 };
}

/** The worst lag of a side's rounds (the one that limits what its pooled figures resolve). */
export function worstLag(runs: readonly MeasuredRun[]): LagSummary | undefined {
  return runs.map((r) => r.result.client_event_loop_lag).reduce<LagSummary | undefined>((w, l) => (l !== undefined && (w === undefined || l.p99_ms > w.p99_ms) ? l : w), undefined);
}

/**
 * One run standing for a side's rounds: their records shifted to run back to back (so duration,
 * throughput and 1 s peaks add up as one long run), its figures computed over all of them, the
 * worst client lag and CPU share of any round, and every round's warnings.
 */
export function poolRounds(side: { label: string; runs: readonly MeasuredRun[] }, percentiles: readonly number[]): MeasuredRun {
  const runs = side.runs;
  if (runs.length === 1) return runs[0]!;
  const first = runs[0]!;
  const records: TimedRecord[] = [];
  let endMs = first.load.startMs;
  for (const r of runs) {
    const shift = endMs - r.load.startMs;
    // Each round's sessions are their own: numbered apart so pooled session times stay per session.
    for (const rec of r.records) records.push({ ...rec, sentMs: rec.sentMs + shift, ...(rec.session ? { session: { ...rec.session, session: rec.session.session + r.round * 1_000_000 } } : {}) });
    endMs = r.load.endMs + shift;
  }
  const load: LoadResult = { records, startMs: first.load.startMs, endMs, warmup: first.load.warmup, cutShort: runs.some((r) => r.load.cutShort) };
  const built = buildResult(load, first.meta, percentiles);
  const lag = worstLag(runs);
  const result: ObservedResult = {
    ...built,
    warnings: runs.flatMap((r) => r.result.warnings.map((w) => `round ${r.round}: ${w}`)),
    client_event_loop_lag: lag,
    client_cpu_share: Math.max(...runs.map((r) => r.result.client_cpu_share ?? 0)),
    unresolved_figures: unresolvedFigures(built, clientTimingOf(records, lag), percentiles),
  };
  return { label: side.label, round: 0, records, result, startMs: load.startMs, load, meta: first.meta };
}
