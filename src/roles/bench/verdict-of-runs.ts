// The verdict of a live comparison: each side's rounds as samples, and each side's figures that
// its client could not resolve (its worst round's lag, its reads) left out of the comparison.
import type { VerdictMetric } from "../../core/stats/run-samples.ts";
import { compareSides, type Verdict } from "../../core/stats/verdict.ts";
import { whyUnresolved, type ClientTiming, type Stat } from "./client-resolution.ts";
import type { Metric } from "./metrics.ts";
import { clientTimingOf, sideSamples, worstLag } from "./pool-rounds.ts";
import type { MeasuredRun } from "./bench-types.ts";

/** The latency statistic behind each verdict figure (throughput and reuse are counts, always resolved). */
const LATENCY_OF: Partial<Record<VerdictMetric, [Metric, Stat]>> = {
  mean_ttft_ms: ["ttft", "mean"],
  p90_ttft_ms: ["ttft", 90],
  mean_itl_ms: ["itl", "mean"],
  mean_tpot_ms: ["tpot", "mean"],
  mean_e2el_ms: ["e2el", "mean"],
};

/** Why `value` of `metric` is not something this client could time, if so. */
export function unresolvedVerdictFigure(metric: VerdictMetric, value: number, timing: ClientTiming): string | undefined {
  const latency = LATENCY_OF[metric];
  return latency ? whyUnresolved(latency[0], latency[1], value, timing) : undefined;
}

export function verdictOfSides(sides: readonly { label: string; runs: readonly MeasuredRun[] }[], seed: number): Verdict {
  const timing = sides.map((s) => clientTimingOf(s.runs.flatMap((r) => r.records), worstLag(s.runs)));
  // Rounds ran interleaved (round k of every side back to back, the same requests): compared pairwise.
  return compareSides(sides.map(sideSamples), { seed, paired: true, unresolved: (i, metric, value) => unresolvedVerdictFigure(metric, value, timing[i]!) });
}
