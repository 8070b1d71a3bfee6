// `replay --prefill-workers N --decode-workers M`: the disaggregated layout and its hand-over figures;
// with `--compare-layouts agg,disagg` both layouts on the same total worker count (agg: N + M
// workers under --router-mode), then the verdict.
import type { EngineConfig } from "../../core/engine/engine-config.ts";
import type { BlockHasher } from "../../core/kv/block-hash.ts";
import { simulateDisagg, type DisaggFigures } from "../../core/replay/disagg-simulator.ts";
import { buildReport, type ReplayReport } from "../../core/replay/report.ts";
import { samplesOfSimulation } from "../../core/replay/samples.ts";
import { simulate, type SimulationResult } from "../../core/replay/simulator.ts";
import { compareSides, type Verdict } from "../../core/stats/verdict.ts";
import type { ArrivalSpec } from "../../core/workload/arrivals.ts";
import type { WorkloadRequest } from "../../core/workload/workload.ts";
import type { SimulatedStack } from "../shared/measure/simulated-stack.ts";

export interface LayoutOptions {
  prefillWorkers: number;
  decodeWorkers: number;
  kvTransferBandwidthGbps: number;
  kvTransferTimingMode: EngineConfig["kvTransferTimingMode"];
  /** Both layouts, the first the verdict's baseline; absent = the disaggregated layout alone. */
  compare?: ("agg" | "disagg")[];
}

export type LayoutReport = ReplayReport & { disaggregation?: DisaggFigures };

export interface LayoutOutcome {
  /** By layout name, in the order run. */
  reports: Record<string, LayoutReport>;
  verdict?: Verdict;
}

/** Seeds the verdict's bootstrap: one replay, one verdict. */
const VERDICT_SEED = 1;

export function runLayouts(workload: readonly WorkloadRequest[], stack: SimulatedStack, layout: LayoutOptions, run: { arrival: ArrivalSpec; seed: number }, deps: { hasher: BlockHasher; now(): number }): LayoutOutcome {
  const engine = { ...stack.engine, kvTransferBandwidthGbps: layout.kvTransferBandwidthGbps, kvTransferTimingMode: layout.kvTransferTimingMode };
  const names = layout.compare ?? ["disagg"];
  const reports: Record<string, LayoutReport> = {};
  const sims: SimulationResult[] = [];
  for (const name of names) {
    const started = deps.now();
    if (name === "agg") {
      const sim = simulate(workload, { engine, numWorkers: layout.prefillWorkers + layout.decodeWorkers, routerMode: stack.routerMode, router: stack.router, arrival: run.arrival, seed: run.seed }, { hasher: deps.hasher });
      sims.push(sim);
      reports.agg = buildReport(sim, { routerMode: stack.routerMode, wallTimeMs: deps.now() - started });
    } else {
      const sim = simulateDisagg(workload, { engine, prefillWorkers: layout.prefillWorkers, decodeWorkers: layout.decodeWorkers, router: stack.router, arrival: run.arrival, seed: run.seed }, { hasher: deps.hasher });
      sims.push(sim);
      reports.disagg = { ...buildReport(sim, { routerMode: "kv (prefill) / load (decode)", wallTimeMs: deps.now() - started }), disaggregation: sim.disagg };
    }
  }
  if (names.length < 2) return { reports };
  const verdict = compareSides(
    sims.map((sim, k) => ({ label: names[k]!, rounds: [samplesOfSimulation(sim)] })),
    { seed: VERDICT_SEED },
  );
  return { reports, verdict };
}
