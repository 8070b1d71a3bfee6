// How close simulated request times are to measured ones, as BLIS reports a simulator's error:
// per metric, the signed error of the mean, p90 and p99; over requests, the mean absolute and the
// mean signed percentage error (MAPE, MPE) and Pearson's r. Pure.
import { percentile } from "../replay/stats.ts";

export interface StatError {
  observed: number;
  simulated: number;
  /** (simulated − observed) / observed, in %. */
  errorPct: number;
}

export interface MetricAccuracy {
  requests: number;
  mean: StatError;
  p90: StatError;
  p99: StatError;
  /** Mean over requests of |simulated − observed| / observed, in %. */
  mapePct: number;
  /** Mean over requests of (simulated − observed) / observed, in %: the bias. */
  mpePct: number;
  /** Pearson's r between the requests' simulated and observed values (NaN with fewer than 2 or no spread). */
  pearsonR: number;
}

/** Accuracy over the pairs whose observed value is positive and both are finite. */
export function accuracyOf(observed: ArrayLike<number>, simulated: ArrayLike<number>): MetricAccuracy {
  const o: number[] = [];
  const s: number[] = [];
  for (let i = 0; i < observed.length; i++) {
    const a = observed[i]!;
    const b = simulated[i]!;
    if (a > 0 && Number.isFinite(a) && Number.isFinite(b)) {
      o.push(a);
      s.push(b);
    }
  }
  const n = o.length;
  let abs = 0;
  let signed = 0;
  for (let i = 0; i < n; i++) {
    const e = (s[i]! - o[i]!) / o[i]!;
    abs += Math.abs(e);
    signed += e;
  }
  const stat = (f: (v: Float64Array) => number): StatError => {
    const observedStat = f(Float64Array.from(o));
    const simulatedStat = f(Float64Array.from(s));
    return { observed: observedStat, simulated: simulatedStat, errorPct: observedStat > 0 ? ((simulatedStat - observedStat) / observedStat) * 100 : NaN };
  };
  return {
    requests: n,
    mean: stat((v) => (v.length > 0 ? v.reduce((a, b) => a + b, 0) / v.length : NaN)),
    p90: stat((v) => (v.length > 0 ? percentile(v, 90) : NaN)),
    p99: stat((v) => (v.length > 0 ? percentile(v, 99) : NaN)),
    mapePct: n > 0 ? (abs / n) * 100 : NaN,
    mpePct: n > 0 ? (signed / n) * 100 : NaN,
    pearsonR: pearson(o, s),
  };
}

export function pearson(x: readonly number[], y: readonly number[]): number {
  const n = x.length;
  if (n < 2) return NaN;
  let mx = 0;
  let my = 0;
  for (let i = 0; i < n; i++) {
    mx += x[i]!;
    my += y[i]!;
  }
  mx /= n;
  my /= n;
  let sxy = 0;
  let sxx = 0;
  let syy = 0;
  for (let i = 0; i < n; i++) {
    const dx = x[i]! - mx;
    const dy = y[i]! - my;
    sxy += dx * dy;
    sxx += dx * dx;
    syy += dy * dy;
  }
  return sxx > 0 && syy > 0 ? sxy / Math.sqrt(sxx * syy) : NaN;
}
