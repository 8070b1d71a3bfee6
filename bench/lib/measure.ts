// Throughput measurement for bench/ scripts: cases run in interleaved rounds and each reports its
// best round, so a burst of load from another process on this shared 2-core machine does not skew
// one case against its peer. Prints nothing; callers format.

export interface BenchCase {
  name: string;
  /** Performs one operation; the returned number is folded into a sink so work is not elided. */
  run: () => number;
  /** Units of work per operation (e.g. blocks per prompt); default 1. */
  unitsPerOp?: number;
}

export interface MeasureOptions {
  roundMs: number;
  rounds: number;
}

let sink = 0;

/** Best units/second of each case over `rounds` interleaved rounds of about `roundMs` each. */
export function measure(cases: readonly BenchCase[], opts: MeasureOptions): Map<string, number> {
  const best = new Map<string, number>(cases.map((c) => [c.name, 0]));
  for (const c of cases) timed(c, opts.roundMs / 4); // warm-up: let the JIT settle
  for (let round = 0; round < opts.rounds; round++) {
    for (const c of cases) best.set(c.name, Math.max(best.get(c.name)!, timed(c, opts.roundMs)));
  }
  if (sink === 0.5) console.log(""); // never true; keeps `sink` observable
  return best;
}

function timed(c: BenchCase, ms: number): number {
  let ops = 0;
  const start = performance.now();
  let now = start;
  // Batches of operations between clock reads keep timer overhead out of the figure.
  const batch = (c.unitsPerOp ?? 1) >= 16 ? 4 : 256;
  while (now - start < ms) {
    for (let i = 0; i < batch; i++) sink += c.run();
    ops += batch;
    now = performance.now();
  }
  return (ops * (c.unitsPerOp ?? 1) * 1000) / (now - start);
}

export function envNumber(name: string, fallback: number): number {
  const v = Number(process.env[name]);
  return Number.isFinite(v) && v > 0 ? v : fallback;
}
