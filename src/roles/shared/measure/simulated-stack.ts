// The stack a replay simulates (workers × data-parallel ranks, router and its tuning, engine
// settings): read from the replay router and engine options, and run on the core simulator.
// Shared by `replay` and bench's --with-replay so both simulate the same configuration alike.
import type { engineOptions } from "../../../config/engine.ts";
import type { ConfigOf } from "../../../config/options.ts";
import type { replayRouterOptions } from "../../../config/replay.ts";
import type { EngineConfig } from "../../../core/engine/engine-config.ts";
import type { BlockHasher } from "../../../core/kv/block-hash.ts";
import { buildReport, type ReplayReport } from "../../../core/replay/report.ts";
import { splitByAdapter } from "../../../core/replay/lora-report.ts";
import { samplesOfSimulation } from "../../../core/replay/samples.ts";
import type { RoundSamples } from "../../../core/stats/run-samples.ts";
import { simulate } from "../../../core/replay/simulator.ts";
import { isSessionWorkload } from "../../../core/replay/session-run.ts";
import { sessionFigures } from "../../../core/replay/session-report.ts";
import { turnOutcomesOfSimulation } from "../../../core/replay/session-outcomes.ts";
import type { RouterOptions } from "../../../core/routing/router-options.ts";
import type { RouterMode } from "../../../protocol/router-modes.ts";
import type { ArrivalSpec } from "../../../core/workload/arrivals.ts";
import type { WorkloadRequest } from "../../../core/workload/workload.ts";
import { onceEach } from "../../../lib/once-each.ts";
import { engineConfigFrom } from "./engine-config-from-options.ts";
import { routerOptionsFrom } from "../routing/router-settings.ts";

export interface SimulatedStack {
  /** Workers, each with data-parallel ranks (routing targets are (worker, rank)). */
  numWorkers: number;
  dataParallelSize?: number;
  routerMode: RouterMode;
  /** The router's tuning (defaults when absent). */
  router?: Omit<RouterOptions, "mode">;
  engine: Partial<EngineConfig>;
  /** Workers holding each LoRA adapter the workload names (default: every worker). */
  loraReplicas?: number;
}

// loraReplicas is replay's own (a stack file or bench's live figures have none).
type StackConfig = Omit<ConfigOf<typeof replayRouterOptions>, "loraReplicas"> & { loraReplicas?: number } & ConfigOf<typeof engineOptions>;

/** The replay router and engine flags as the simulated stack (Dynamo spellings → simulator names). */
export function simulatedStackFrom(c: StackConfig): SimulatedStack {
  return {
    // Each data-parallel rank is its own engine and routing candidate; the report keeps them apart.
    numWorkers: c.numWorkers,
    dataParallelSize: c.dataParallelSize,
    routerMode: c.routerMode,
    router: routerOptionsFrom(c),
    engine: engineConfigFrom(c),
    ...(c.loraReplicas !== undefined ? { loraReplicas: c.loraReplicas } : {}),
  };
}

export interface SimulationRun {
  arrival: ArrivalSpec;
  /** Seeds random routing and Poisson arrivals (engines take engine.seed). */
  seed: number;
  /** Session workloads: at most this many sessions open at once. */
  maxSessions?: number;
  /** Judge every decision's regret (default false: it costs a second index). */
  regret?: boolean;
  /** Wall clock (deps.now) when the run started; the report's wall time counts from here. */
  startedMs: number;
  onProgress?: (done: number, total: number) => void;
}

/** Simulates `workload` on the stack (virtual clock) and builds the replay report. */
export function simulateStack(workload: readonly WorkloadRequest[], s: SimulatedStack, run: SimulationRun, deps: { hasher: BlockHasher; now(): number; warn?: (message: string) => void }): ReplayReport {
  return simulateStackWithSamples(workload, s, run, deps).report;
}

/** As simulateStack, with the completed requests as verdict samples (for comparisons over seeds). */
export function simulateStackWithSamples(workload: readonly WorkloadRequest[], s: SimulatedStack, run: SimulationRun, deps: { hasher: BlockHasher; now(): number; warn?: (message: string) => void }): { report: ReplayReport; samples: RoundSamples } {
  const sim = simulate(
    workload,
    {
      engine: s.engine,
      numWorkers: s.numWorkers,
      dataParallelSize: s.dataParallelSize,
      routerMode: s.routerMode,
      router: s.router,
      arrival: run.arrival,
      maxSessions: run.maxSessions,
      seed: run.seed,
      regret: run.regret,
      onProgress: run.onProgress,
      loraReplicas: s.loraReplicas,
    },
    { hasher: deps.hasher, ...(deps.warn ? { warn: onceEach(deps.warn) } : {}) },
  );
  const samples = samplesOfSimulation(sim);
  const report = buildReport(sim, { routerMode: s.routerMode, wallTimeMs: deps.now() - run.startedMs });
  if (isSessionWorkload(workload)) report.sessions = sessionFigures(turnOutcomesOfSimulation(workload, sim));
  const byAdapter = splitByAdapter(sim, workload);
  if (byAdapter !== undefined) report.by_lora_adapter = byAdapter;
  return { report, samples };
}
