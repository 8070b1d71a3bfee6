// When each workload request arrives: trace timestamps (divided by an arrival speedup
// ratio), a Poisson process at a request rate, or a closed loop of N in flight (no schedule).
import type { Rng } from "../random/rng.ts";
import type { WorkloadRequest } from "./workload.ts";

export type ArrivalSpec =
  | { kind: "trace"; speedupRatio: number }
  | { kind: "rate"; requestsPerSecond: number }
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
      // Exponential gaps; the first request arrives at 0 (as vLLM's benchmark starts).
      let t = 0;
      for (let i = 0; i < requests.length; i++) {
        if (i > 0) t += (-Math.log(1 - rng.next()) / spec.requestsPerSecond) * 1000;
        out[i] = t;
      }
      return out;
    }
  }
}
