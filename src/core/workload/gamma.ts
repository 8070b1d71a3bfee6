// Gamma-distributed samples from the seeded core RNG, for vLLM's bursty arrivals
// (`--burstiness`: inter-arrival gaps ~ Gamma(shape = burstiness, scale = 1 / (rate · burstiness)),
// mean 1/rate, coefficient of variation 1/sqrt(burstiness)). Marsaglia and Tsang's method.
import type { Rng } from "../random/rng.ts";

/** One Gamma(shape, scale) sample; shape > 0. */
export function sampleGamma(rng: Rng, shape: number, scale: number): number {
  // Shape below 1: Gamma(shape + 1) · U^(1/shape) (the boost keeps the squeeze valid).
  if (shape < 1) return sampleGamma(rng, shape + 1, scale) * Math.pow(1 - rng.next(), 1 / shape);
  const d = shape - 1 / 3;
  const c = 1 / Math.sqrt(9 * d);
  for (;;) {
    let x: number;
    let v: number;
    do {
      x = standardNormal(rng);
      v = 1 + c * x;
    } while (v <= 0);
    v = v * v * v;
    const u = 1 - rng.next(); // (0, 1]: log(u) is finite
    if (u < 1 - 0.0331 * x ** 4 || Math.log(u) < 0.5 * x * x + d * (1 - v + Math.log(v))) return d * v * scale;
  }
}

/** Box–Muller (one of the pair; the other is dropped so the stream stays simple to reason about). */
function standardNormal(rng: Rng): number {
  const u1 = 1 - rng.next();
  const u2 = rng.next();
  return Math.sqrt(-2 * Math.log(u1)) * Math.cos(2 * Math.PI * u2);
}
