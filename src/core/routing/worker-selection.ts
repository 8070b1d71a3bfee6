// Picks a worker from per-candidate costs: lowest cost, exact ties broken uniformly at random;
// with temperature T > 0, samples p ∝ exp(−(c − min) / ((max − min) × T)), uniform when all
// costs are equal (as Dynamo's KV router). Pure: the RNG is passed in.
import type { Rng } from "../random/rng.ts";

export function selectByCost(costs: ArrayLike<number>, n: number, rng: Rng, temperature = 0): number {
  if (n <= 0) return -1;
  if (temperature > 0) return softmaxSample(costs, n, rng, temperature);
  let best = -1;
  let ties = 0;
  for (let i = 0; i < n; i++) {
    if (best === -1 || costs[i]! < costs[best]!) {
      best = i;
      ties = 1;
    } else if (costs[i] === costs[best]) {
      // Reservoir sampling keeps a uniform choice among equal candidates in one pass.
      ties++;
      if (rng.int(ties) === 0) best = i;
    }
  }
  return best;
}

function softmaxSample(costs: ArrayLike<number>, n: number, rng: Rng, temperature: number): number {
  let lo = Infinity;
  let hi = -Infinity;
  for (let i = 0; i < n; i++) {
    lo = Math.min(lo, costs[i]!);
    hi = Math.max(hi, costs[i]!);
  }
  const span = hi - lo || 1;
  const weights = new Float64Array(n);
  let total = 0;
  for (let i = 0; i < n; i++) total += weights[i] = Math.exp(-((costs[i]! - lo) / span) / temperature);
  let x = rng.next() * total;
  for (let i = 0; i < n; i++) {
    x -= weights[i]!;
    if (x < 0) return i;
  }
  return n - 1;
}
