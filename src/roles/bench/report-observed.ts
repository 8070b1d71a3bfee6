// The HTML report's charts of what a run observed besides its requests: fault windows (shaded on
// every time chart), index accuracy over time (the audit's worst precision and recall per sample)
// and the routing-regret histogram. Built from the results here; html-report.ts draws them.
import type { AppliedFault } from "../shared/stack/fault-runner.ts";
import type { RunObservation } from "./observe-run.ts";

/** A span to shade on time charts (seconds from the run's start); a fault with no length is a line. */
export interface FaultWindow {
  from_s: number;
  to_s: number;
  label: string;
  /** Index of the run it belongs to (its colour). */
  run: number;
}

export interface ObservedChart {
  id: string;
  title: string;
  xLabel: string;
  yLabel: string;
  data: (number | null)[][];
  series: string[];
  bars?: boolean;
  windows?: FaultWindow[];
}

/** Every applied fault of every run as a window: applied → end (or applied, when it has no known end). */
export function faultWindows(observed: readonly RunObservation[]): FaultWindow[] {
  return observed.flatMap((o, run) =>
    (o.faults ?? [])
      .filter((f: AppliedFault) => f.error === undefined)
      .map((f) => ({ from_s: f.applied_s, to_s: Math.max(f.applied_s, f.ends_at_s ?? f.applied_s), label: `${f.kind} on ${f.target}`, run })),
  );
}

/** Worst precision and recall per audit sample, two series per run; undefined when no run has points. */
export function accuracyChart(labels: readonly string[], observed: readonly RunObservation[]): ObservedChart | undefined {
  const runs = observed.map((o) => o.audit?.points ?? []);
  if (runs.every((p) => p.length === 0)) return undefined;
  const xs = [...new Set(runs.flatMap((p) => p.map((x) => x.t_s)))].sort((a, b) => a - b);
  const data: (number | null)[][] = [xs];
  const series: string[] = [];
  runs.forEach((points, i) => {
    const at = new Map(points.map((p) => [p.t_s, p]));
    for (const key of ["precision", "recall"] as const) {
      series.push(`${labels[i]} ${key}`);
      data.push(xs.map((t) => at.get(t)?.[key] ?? null));
    }
  });
  return { id: "accuracy", title: "Index accuracy (worst worker: precision and recall of the router's index against the mockers' truth)", xLabel: "seconds since start", yLabel: "share", data, series, windows: faultWindows(observed) };
}

interface Histogram {
  histogram?: { bucket_blocks: number; count: number }[];
}

/** Requests per regret bucket (blocks of overlap lost against the best worker), one series per run; undefined without regret. */
export function regretChart(labels: readonly string[], observed: readonly RunObservation[]): ObservedChart | undefined {
  const hists = observed.map((o) => (o.regret as Histogram | null | undefined)?.histogram ?? []);
  if (hists.every((h) => h.length === 0)) return undefined;
  const xs = [...new Set(hists.flatMap((h) => h.map((b) => b.bucket_blocks)))].sort((a, b) => a - b);
  return {
    id: "regret",
    title: "Routing regret (requests per blocks of overlap lost against the best worker)",
    xLabel: "regret (blocks)",
    yLabel: "requests",
    data: [xs, ...hists.map((h) => xs.map((x) => h.find((b) => b.bucket_blocks === x)?.count ?? 0))],
    series: [...labels],
    bars: true,
  };
}
