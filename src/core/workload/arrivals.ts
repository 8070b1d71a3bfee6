// When each workload request arrives: trace timestamps (divided by an arrival speedup
// ratio), a Poisson process at a request rate, or a closed loop of N in flight (no schedule).
import type { Rng } from "../random/rng.ts";
import { sampleGamma } from "./gamma.ts";
import type { WorkloadRequest } from "./workload.ts";

export type ArrivalSpec =
  | { kind: "trace"; speedupRatio: number }
  | {
      kind: "rate";
      /** Infinity sends everything at 0 (vLLM's `--request-rate inf`). */
      requestsPerSecond: number;
      /** Gamma shape of the gaps (vLLM's --burstiness): 1 = Poisson, below 1 burstier, Infinity evenly spaced. */
      burstiness?: number;
      /**
       * Rescale the gaps so the last arrival is at n / rate, as vLLM's bench does ("stabilizing the
       * throughput across seeds"); replay keeps its raw Poisson draws.
       */
      scaleToRate?: boolean;
    }
  | { kind: "concurrency"; concurrency: number };

/** Arrival times (ms from 0) in workload order, or undefined for a closed loop. */
export function arrivalTimesMs(requests: readonly WorkloadRequest[], spec: ArrivalSpec, rng: Rng): Float64Array | undefined {
  const out = new Float64Array(requests.length);
  switch (spec.kind) {
    case "concurrency":
      return undefined;
    case "trace": {
      let t0 = Infinity;
      for (const r of requests) t0 = Math.min(t0, r.timestampMs);
      for (let i = 0; i < requests.length; i++) out[i] = (requests[i]!.timestampMs - t0) / spec.speedupRatio;
      return out;
    }
    case "rate": {
      const rate = spec.requestsPerSecond;
      const shape = spec.burstiness ?? 1;
      if (rate === Infinity) return out; // all at 0
      // The first request arrives at 0 (as vLLM's benchmark starts). Shape 1 keeps the exponential
      // draw (same stream as before burstiness existed); other shapes draw Gamma(shape, 1/(rate·shape)).
      const gapMs = () =>
        shape === Infinity ? 1000 / rate : shape === 1 ? (-Math.log(1 - rng.next()) / rate) * 1000 : sampleGamma(rng, shape, 1 / (rate * shape)) * 1000;
      let t = 0;
      for (let i = 0; i < requests.length; i++) {
        if (i > 0) t += gapMs();
        out[i] = t;
      }
      const last = out[requests.length - 1] ?? 0;
      if (spec.scaleToRate && last > 0) {
        // vLLM accumulates n gaps (its first request also waits one) and scales their sum to n / rate;
        // with the first request at 0 the span of n − 1 gaps is scaled to (n − 1) / rate.
        const factor = (((requests.length - 1) / rate) * 1000) / last;
        for (let i = 0; i < out.length; i++) out[i]! *= factor;
      }
      return out;
    }
  }
}

/**
 * A simulation's arrival FIFO at time 0 (`time[k]` at which request `index[k]` arrives): the whole
 * schedule in time order, or, with no schedule, the first `concurrency` requests from `closedFrom`
 * at 0; `nextClosed` is the next request a completion feeds in (read only without a schedule).
 */
export function firstArrivals(n: number, times: ArrayLike<number> | undefined, spec: ArrivalSpec, closedFrom = 0): { time: number[]; index: number[]; nextClosed: number } {
  const time: number[] = [];
  const index: number[] = [];
  let nextClosed = closedFrom;
  if (times !== undefined) {
    const order = Array.from({ length: n }, (_, i) => i).sort((a, b) => times[a]! - times[b]! || a - b);
    for (const i of order) {
      time.push(times[i]!);
      index.push(i);
    }
  } else {
    const c = spec.kind === "concurrency" ? spec.concurrency : n;
    for (; nextClosed < Math.min(c, n); nextClosed++) {
      time.push(0);
      index.push(nextClosed);
    }
  }
  return { time, index, nextClosed };
}
