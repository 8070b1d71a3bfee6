// `up`'s disaggregated layout: --prefill-workers N --decode-workers M start N prefill and M decode
// workers (mocker --disaggregation-mode), each mocker process serving one pool, so a process
// killed takes workers of one side only. Without them the stack is aggregated, as before.
import type { DisaggregationMode } from "./disaggregation.ts";
import type { Candidate } from "./load.ts";
import { group } from "./options.ts";

export const pdLayoutOptions = group("Stack", {
  prefillWorkers: { kind: "int", min: 1, max: 100_000, description: "Disaggregated stack: this many prefill workers (with --decode-workers; each mocker process serves one pool)" },
  decodeWorkers: { kind: "int", min: 1, max: 100_000, description: "Disaggregated stack: this many decode workers (with --prefill-workers)" },
});

export interface PdLayoutConfig {
  prefillWorkers?: number | undefined;
  decodeWorkers?: number | undefined;
  workersPerProcess: number;
}

/** The prefill pool's mocker processes (the first ones), or undefined for an aggregated stack. */
export function prefillProcesses(c: PdLayoutConfig): number | undefined {
  return c.prefillWorkers === undefined ? undefined : c.prefillWorkers / c.workersPerProcess;
}

/** Mocker process `i`'s side: agg, or with a disaggregated layout prefill (the first processes) or decode. */
export function mockerSideOf(c: PdLayoutConfig, i: number): DisaggregationMode {
  const prefill = prefillProcesses(c);
  return prefill === undefined ? "agg" : i < prefill ? "prefill" : "decode";
}

const gcd = (a: number, b: number): number => (b === 0 ? a : gcd(b, a % b));

/**
 * The layout as processes: --workers-per-process (default: the largest count dividing both pools)
 * must divide each pool; --mocker-processes and --num-workers are derived, so giving them too is a
 * contradiction named with both flags.
 */
export function pdLayoutOverlay(c: PdLayoutConfig, problems: string[], given: ReadonlySet<string>): Map<string, Candidate> {
  const { prefillWorkers: n, decodeWorkers: m } = c;
  if (n === undefined && m === undefined) return new Map();
  if (n === undefined || m === undefined) {
    problems.push(`${n === undefined ? "--decode-workers" : "--prefill-workers"}: a disaggregated stack needs both --prefill-workers and --decode-workers`);
    return new Map();
  }
  for (const key of ["mockerProcesses", "numWorkers"] as const) {
    if (given.has(key)) problems.push(`--${key === "numWorkers" ? "num-workers" : "mocker-processes"}: follows from --prefill-workers ${n} and --decode-workers ${m}; give one or the other`);
  }
  const w = given.has("workersPerProcess") ? c.workersPerProcess : gcd(n, m);
  if (n % w !== 0 || m % w !== 0) problems.push(`--workers-per-process: ${w} must divide --prefill-workers ${n} and --decode-workers ${m} (each process serves one pool)`);
  if (problems.length > 0) return new Map();
  const label = "--prefill-workers + --decode-workers";
  return new Map([
    ["workersPerProcess", { value: w, label }],
    ["mockerProcesses", { value: (n + m) / w, label }],
  ]);
}
