// --with-replay: the figures a user compares side by side (the live run's workload, arrivals and
// engine settings are simulated by src/roles/shared/measure/simulated-stack.ts, as `replay` does).
import type { ReplayReport } from "../../core/replay/report.ts";
import type { ComparedFigure } from "./format-result.ts";
import type { BenchResult } from "./metrics.ts";

/** The rows of the predicted-vs-measured table (replay reports p50/p90/p99; bench's percentiles may differ). */
export function predictionFigures(replay: ReplayReport, live: BenchResult): ComparedFigure[] {
  const rows: ComparedFigure[] = [];
  const get = (r: object, k: string) => (r as Record<string, number>)[k];
  for (const [m, name] of [["ttft", "TTFT"], ["itl", "ITL"], ["tpot", "TPOT"], ["e2el", "E2EL"]] as const) {
    for (const stat of ["mean", "median", "p90", "p99"] as const) {
      const measured = get(live, `${stat}_${m}_ms`);
      const predicted = get(replay, `${stat}_${m}_ms`);
      if (measured !== undefined && predicted !== undefined) rows.push({ label: `${stat} ${name} (ms)`, predicted, measured });
    }
  }
  rows.push(
    { label: "request throughput (req/s)", predicted: replay.request_throughput, measured: live.request_throughput },
    { label: "output throughput (tok/s)", predicted: replay.output_throughput, measured: live.output_throughput, digits: 1 },
    { label: "duration (s)", predicted: replay.duration, measured: live.duration },
    { label: "completed", predicted: replay.completed, measured: live.completed, digits: 0 },
  );
  if (live.prefix_cache_reuse_ratio !== null) rows.push({ label: "prefix cache reuse ratio", predicted: replay.prefix_cache_reuse_ratio, measured: live.prefix_cache_reuse_ratio, digits: 4 });
  return rows;
}
