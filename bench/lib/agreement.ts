// Do two routers send a request to the same worker? Each routes its own fleet (two identical fresh
// fleets: one fleet behind both would share caches), and worker names differ between them; where a
// tie was broken differently the fleets even hold different things. So "the same worker" is judged
// by what it holds: at rest (one request at a time, nothing evicted) a decision's cost is lowest on
// the worker holding the longest cached prefix of the prompt. A decision counts where that worker
// is unique in both fleets, and agrees when both routers chose it, or (both missing it) chose
// workers holding the same length. Ties (a new prefix, where either may pick any) are reported
// apart. Pure.

/** One request as each fleet saw it: the prefix length (blocks) its chosen worker held, and its best. */
export interface FleetView {
  chosenDepth: number;
  bestDepth: number;
  unique: boolean;
}

export interface Decision {
  a: FleetView;
  b: FleetView;
}

export interface Agreement {
  counted: number;
  agreed: number;
  ties: number;
  /** The share agreed and its 95 % Wilson interval. */
  share: number;
  low: number;
  high: number;
}

export function agreement(decisions: readonly Decision[]): Agreement {
  let counted = 0, agreed = 0, ties = 0;
  for (const { a, b } of decisions) {
    if (!a.unique || !b.unique) {
      ties++;
      continue;
    }
    counted++;
    const [bestA, bestB] = [a.chosenDepth === a.bestDepth, b.chosenDepth === b.bestDepth];
    if (bestA && bestB) agreed++;
    else if (!bestA && !bestB && a.chosenDepth === b.chosenDepth) agreed++;
  }
  return { counted, agreed, ties, ...wilson(agreed, counted) };
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
 * A fleet's cache, as its router sees it at rest: the prompt blocks each worker has served (a
 * chained hash per full block, so a block stands for its whole prefix).
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

  /** How this fleet saw a prompt it sent to `chosen`, among `workers` (all of them: one never chosen holds nothing). */
  view(blocks: readonly number[], chosen: string, workers: readonly string[]): FleetView {
    const depthOf = (w: string) => {
      const set = this.held.get(w);
      let d = 0;
      while (set && d < blocks.length && set.has(blocks[d]!)) d++;
      return d;
    };
    const depths = workers.map(depthOf);
    const best = Math.max(...depths);
    return { chosenDepth: depthOf(chosen), bestDepth: best, unique: depths.filter((d) => d === best).length === 1 };
  }

  served(worker: string, blocks: readonly number[]): void {
    let set = this.held.get(worker);
    if (!set) this.held.set(worker, (set = new Set()));
    for (const b of blocks) set.add(b);
  }
}
