// Do two routers send a request to the same worker? Each routes its own fleet (two identical fresh
// fleets: one fleet behind both would share caches), so worker names differ between them: a
// worker of one fleet stands for the worker of the other that it was first paired with, and a
// decision agrees when the two choices are paired (or both new, which pairs them). Only decisions
// with a unique best worker count; ties (every new prefix at rest, where either may pick any)
// are reported apart and pair their choices when both are new. Pure.

export interface Decision {
  /** The worker fleet A's router chose, and fleet B's. */
  a: string;
  b: string;
  /** Whether the cost had a unique minimum (from fleet A's cache state). */
  unique: boolean;
}

export interface Agreement {
  counted: number;
  agreed: number;
  ties: number;
  /** Tie decisions whose choices were already paired with each other. */
  tiesAgreed: number;
  /** The share agreed and its 95 % Wilson interval. */
  share: number;
  low: number;
  high: number;
}

export function agreement(decisions: readonly Decision[]): Agreement {
  const aToB = new Map<string, string>();
  const bToA = new Map<string, string>();
  let counted = 0, agreed = 0, ties = 0, tiesAgreed = 0;
  for (const { a, b, unique } of decisions) {
    const paired = aToB.get(a) === b;
    const bothNew = !aToB.has(a) && !bToA.has(b);
    if (bothNew) {
      aToB.set(a, b);
      bToA.set(b, a);
    }
    if (unique) {
      counted++;
      if (paired || bothNew) agreed++;
    } else {
      ties++;
      if (paired) tiesAgreed++;
    }
  }
  return { counted, agreed, ties, tiesAgreed, ...wilson(agreed, counted) };
}

/** The 95 % Wilson score interval of k successes in n. */
export function wilson(k: number, n: number): { share: number; low: number; high: number } {
  if (n === 0) return { share: NaN, low: 0, high: 1 };
  const z = 1.96, p = k / n;
  const centre = (p + (z * z) / (2 * n)) / (1 + (z * z) / n);
  const half = (z * Math.sqrt((p * (1 - p)) / n + (z * z) / (4 * n * n))) / (1 + (z * z) / n);
  return { share: p, low: Math.max(0, centre - half), high: Math.min(1, centre + half) };
}

/**
 * Fleet A's cache, as its router sees it at rest: the prompt blocks each worker has served (a
 * chained hash per full block, so a block stands for its whole prefix). With no request in flight
 * and nothing evicted, the cost is lowest where the cached prefix is longest: unique when one
 * worker alone holds the longest.
 */
export class PrefixHoldings {
  private readonly held = new Map<string, Set<number>>();
  constructor(private readonly blockSize: number) {}

  /** The chained block hashes of a prompt's full blocks. */
  blocks(tokens: ArrayLike<number>): number[] {
    const out: number[] = [];
    let h = 0x811c9dc5;
    for (let i = 0; i + this.blockSize <= tokens.length; i += this.blockSize) {
      for (let j = i; j < i + this.blockSize; j++) h = Math.imul(h ^ tokens[j]!, 0x01000193) >>> 0;
      out.push(h);
    }
    return out;
  }

  /** Whether one worker alone (of `workers`) holds the longest prefix of `blocks`. */
  uniqueBest(blocks: readonly number[], workers: readonly string[]): boolean {
    const depth = workers.map((w) => {
      const set = this.held.get(w);
      let d = 0;
      while (set && d < blocks.length && set.has(blocks[d]!)) d++;
      return d;
    });
    const best = Math.max(...depth);
    return depth.filter((d) => d === best).length === 1;
  }

  served(worker: string, blocks: readonly number[]): void {
    let set = this.held.get(worker);
    if (!set) this.held.set(worker, (set = new Set()));
    for (const b of blocks) set.add(b);
  }
}
