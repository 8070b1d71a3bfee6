// A simulated run's completed requests as verdict samples (core/stats/run-samples.ts), so replay
// comparisons (router modes over seeds) get the same verdicts as live ones. A simulated request's
// gaps are one per decode step: they sum to last token − first token, one fewer than its tokens.
import type { RequestSample, RoundSamples } from "../stats/run-samples.ts";
import type { SimulationResult } from "./simulator.ts";

export function samplesOfSimulation(sim: SimulationResult): RoundSamples {
  const requests: RequestSample[] = [];
  let start = Infinity;
  let end = -Infinity;
  for (let i = 0; i < sim.numRequests; i++) {
    if (sim.errors.has(i)) continue;
    const arrival = sim.arrivalMs[i]!;
    const first = sim.firstTokenMs[i]!;
    const last = sim.lastTokenMs[i]!;
    const out = sim.outputTokens[i]!;
    requests.push({ ttftMs: first - arrival, e2elMs: last - arrival, outputTokens: out, itlSumMs: last - first, itlCount: Math.max(0, out - 1), promptTokens: sim.promptTokens[i]!, cachedTokens: sim.cachedTokens[i]! });
    start = Math.min(start, arrival);
    end = Math.max(end, last);
  }
  // The report's duration: first arrival to last token of the completed requests.
  return { requests, durationS: requests.length > 0 ? (end - start) / 1000 : 0 };
}
