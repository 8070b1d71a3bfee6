// A bench's headline figures in a form another script can read: each figure() call appends one
// JSON line to the file KVCR_BENCH_FIGURES names (bench/against.ts sets it), and does nothing
// otherwise; the bench prints its own lines as before. Imports nothing from src/, so the same
// file works in the tree of any earlier revision bench/against.ts copies it into.
import { appendFileSync } from "node:fs";

/** Which way a figure improves: req/s "higher", µs per request "lower". */
export type Better = "higher" | "lower";

export interface Figure {
  name: string;
  value: number;
  unit: string;
  better: Better;
}

export const FIGURES_ENV = "KVCR_BENCH_FIGURES";

/** Records one figure for a reader of this run (a no-op when nobody asked). */
export function figure(name: string, value: number, unit: string, better: Better): void {
  const file = process.env[FIGURES_ENV];
  if (!file) return;
  if (!Number.isFinite(value)) throw new Error(`figure "${name}" is ${value}, not a finite number`);
  appendFileSync(file, JSON.stringify({ name, value, unit, better } satisfies Figure) + "\n");
}
