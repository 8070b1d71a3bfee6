// A simulated run's session turns as report outcomes (session-report.ts): send = arrival on the
// virtual clock, finish = last token.
import type { WorkloadRequest } from "../workload/workload.ts";
import type { TurnOutcome } from "./session-report.ts";
import type { SimulationResult } from "./simulator.ts";

export function turnOutcomesOfSimulation(workload: readonly WorkloadRequest[], sim: SimulationResult): TurnOutcome[] {
  const out: TurnOutcome[] = [];
  for (let i = 0; i < sim.numRequests; i++) {
    const link = workload[i]!.session;
    if (link === undefined) continue;
    const ok = !sim.errors.has(i);
    out.push({
      session: link.session,
      turn: link.turn,
      ok,
      sentMs: sim.arrivalMs[i]!,
      ttftMs: sim.firstTokenMs[i]! - sim.arrivalMs[i]!,
      finishMs: sim.lastTokenMs[i]!,
      promptTokens: sim.promptTokens[i]!,
      cachedTokens: sim.cachedTokens[i]!,
    });
  }
  return out;
}
