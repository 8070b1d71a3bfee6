// Seeded pseudo-random numbers for core (no Math.random): a xoshiro128** stream for choices
// (random routing, Poisson arrivals, synthetic prompts) and a stateless 32-bit mixer for
// counter-based values (output tokens) that must not depend on call order.

export interface Rng {
  /** Uniform u32. */
  nextU32(): number;
  /** Uniform in [0, 1). */
  next(): number;
  /** Uniform integer in [0, n). */
  int(n: number): number;
}

/** Finalizer of murmur3 / splitmix32: a bijective avalanche over 32 bits. */
export function mix32(x: number): number {
  x = Math.imul(x ^ (x >>> 16), 0x85ebca6b);
  x = Math.imul(x ^ (x >>> 13), 0xc2b2ae35);
  return (x ^ (x >>> 16)) >>> 0;
}

/** Most seeds take: every safe integer (2^53 − 1); the options cap `--seed` at this. */
export const MAX_SEED = Number.MAX_SAFE_INTEGER;

/** The high 21 bits of a safe-integer seed (0 for seeds below 2^32). */
export function seedHigh(seed: number): number {
  return Math.floor(seed / 4294967296) >>> 0;
}

/**
 * xoshiro128** seeded through splitmix32 so nearby seeds give unrelated streams. Both halves of
 * the seed count (`--seed 4294967296` is not `--seed 0`): the low 32 bits seed the
 * state as they always did, the high bits are mixed into its second half, so seeds below 2^32
 * keep their streams and distinct seeds give distinct states.
 */
export function createRng(seed: number): Rng {
  if (!Number.isSafeInteger(seed) || seed < 0) throw new RangeError(`seed must be an integer from 0 to ${MAX_SEED}, got ${seed}`);
  let s = seed >>> 0;
  const split = () => {
    s = (s + 0x9e3779b9) >>> 0;
    return mix32(s) | 0;
  };
  let a = split();
  let b = split();
  let c = split();
  let d = split();
  const hi = seedHigh(seed);
  if (hi !== 0) {
    c ^= mix32(hi ^ 0x6a09e667);
    d ^= mix32(hi ^ 0xbb67ae85);
  }
  if ((a | b | c | d) === 0) a = 1; // the all-zero state is a fixed point
  const nextU32 = (): number => {
    const result = Math.imul(rotl(Math.imul(b, 5), 7), 9) >>> 0;
    const t = b << 9;
    c ^= a;
    d ^= b;
    b ^= c;
    a ^= d;
    c ^= t;
    d = rotl(d, 11);
    return result;
  };
  return {
    nextU32,
    next: () => nextU32() / 4294967296,
    int: (n) => Math.floor((nextU32() / 4294967296) * n),
  };
}

function rotl(x: number, k: number): number {
  return (x << k) | (x >>> (32 - k));
}
