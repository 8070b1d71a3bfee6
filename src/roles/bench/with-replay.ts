// --with-replay: the live run's workload, arrivals and engine settings simulated by replay's core
// (virtual clock, same engines and router code), and the figures a user compares side by side.
import type { BlockHasher } from "../../core/kv/block-hash.ts";
import type { EngineConfig } from "../../core/engine/engine-config.ts";
import { buildReport, type ReplayReport } from "../../core/replay/report.ts";
import { simulate } from "../../core/replay/simulator.ts";
import type { RouterMode } from "../../core/routing/router.ts";
import type { ArrivalSpec } from "../../core/workload/arrivals.ts";
import type { WorkloadRequest } from "../../core/workload/workload.ts";
import type { ComparedFigure } from "./format-result.ts";
import type { BenchResult } from "./metrics.ts";

export interface ReplaySettings {
  /** The stack under test: workers, each with data-parallel ranks (routing targets are (worker, rank)). */
  numWorkers: number;
  dataParallelSize?: number;
  routerMode: RouterMode;
  prefillLoadScale: number;
  hostWeight?: number;
  diskWeight?: number;
  routerTemperature: number;
  busyThreshold?: number;
  engine: Partial<EngineConfig>;
}

export function predict(workload: readonly WorkloadRequest[], arrival: ArrivalSpec, seed: number, s: ReplaySettings, deps: { hasher: BlockHasher; now(): number }): ReplayReport {
  const started = deps.now();
  const sim = simulate(
    workload,
    { engine: s.engine, numWorkers: s.numWorkers, dataParallelSize: s.dataParallelSize, routerMode: s.routerMode, prefillLoadScale: s.prefillLoadScale, hostWeight: s.hostWeight, diskWeight: s.diskWeight, routerTemperature: s.routerTemperature, busyThreshold: s.busyThreshold, arrival, seed },
    { hasher: deps.hasher },
  );
  return buildReport(sim, { routerMode: s.routerMode, wallTimeMs: deps.now() - started });
}

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
