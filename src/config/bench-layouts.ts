// `bench --compare-layouts agg,disagg`: the same workload against a fresh aggregated stack and a
// fresh disaggregated one with the same workers in all (--prefill-workers + --decode-workers), each
// started by `up`; the first layout is the verdict's baseline. Here: the flags, their rules and
// each layout's `up` arguments.
import { group } from "./options.ts";

export const LAYOUTS = ["agg", "disagg"] as const;
export type Layout = (typeof LAYOUTS)[number];
const DEFAULT_POOL = 2;

export const benchLayoutOptions = group("Comparisons and fresh stacks", {
  compareLayouts: {
    kind: "string",
    nonEmpty: true,
    description: "agg,disagg: run the same workload against a fresh aggregated stack and a fresh disaggregated one of as many workers (--prefill-workers + --decode-workers): the verdict (the first layout is the baseline), then the layouts side by side",
  },
  prefillWorkers: { kind: "int", min: 1, max: 100_000, description: `With --compare-layouts: the disaggregated stack's prefill workers (default ${DEFAULT_POOL})` },
  decodeWorkers: { kind: "int", min: 1, max: 100_000, description: `With --compare-layouts: the disaggregated stack's decode workers (default ${DEFAULT_POOL})` },
});

export interface BenchLayoutConfig {
  compareLayouts?: string | undefined;
  prefillWorkers?: number | undefined;
  decodeWorkers?: number | undefined;
  compareRouterModes?: string | undefined;
  urlPerMode?: string | undefined;
  sweepConcurrency?: number[] | undefined;
  withReplay?: boolean;
}

/** "agg,disagg" → the layouts in order, or a problem line. */
export function parseLayouts(text: string): Layout[] | string {
  const parts = text.split(",").map((p) => p.trim());
  const bad = parts.filter((p) => !(LAYOUTS as readonly string[]).includes(p));
  if (bad.length > 0 || parts.length !== new Set(parts).size || parts.length < 2) return `--compare-layouts: got "${text}", expected ${LAYOUTS.join(" and ")} once each, comma-separated (the first is the baseline)`;
  return parts as Layout[];
}

const gcd = (a: number, b: number): number => (b === 0 ? a : gcd(b, a % b));

/** The `up` arguments of one layout: the same workers in all, and as many per mocker process. */
export function layoutUpArgs(layout: Layout, c: BenchLayoutConfig): string[] {
  const n = c.prefillWorkers ?? DEFAULT_POOL;
  const m = c.decodeWorkers ?? DEFAULT_POOL;
  const w = gcd(n, m);
  return layout === "disagg" ? ["--prefill-workers", String(n), "--decode-workers", String(m)] : ["--mocker-processes", String((n + m) / w), "--workers-per-process", String(w)];
}

/** `hasUrl`: a running server was given (--url, --host/--port). */
export function benchLayoutProblems(c: BenchLayoutConfig, hasUrl: boolean): string[] {
  const out: string[] = [];
  if (c.compareLayouts === undefined) {
    for (const [v, flag] of [[c.prefillWorkers, "--prefill-workers"], [c.decodeWorkers, "--decode-workers"]] as const) if (v !== undefined) out.push(`${flag}: sizes the disaggregated side of --compare-layouts, which is not given`);
    return out;
  }
  const parsed = parseLayouts(c.compareLayouts);
  if (typeof parsed === "string") out.push(parsed);
  if (hasUrl || c.urlPerMode !== undefined) out.push("--compare-layouts: starts a fresh stack per layout; drop --url / --url-per-mode");
  if (c.compareRouterModes !== undefined) out.push("--compare-layouts and --compare-router-modes: compare one thing at a time");
  if (c.sweepConcurrency !== undefined) out.push("--compare-layouts and --sweep-concurrency: compare one thing at a time");
  if (c.withReplay) out.push("--with-replay: compares one live run with its simulation; drop --compare-layouts (replay --compare-layouts simulates both)");
  return out;
}
