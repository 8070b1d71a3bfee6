// Synthetic shared-prefix workload: `numPrefixes` random prefixes of `prefixTokens`,
// each request one of them (chosen at random) plus its own `suffixTokens` random tokens, asking
// for `outputTokens`. Seeded: the same options give the same prompts.
import { createRng, mix32 } from "../random/rng.ts";
import type { WorkloadRequest } from "./workload.ts";

export interface SharedPrefixOptions {
  numPrefixes: number;
  prefixTokens: number;
  suffixTokens: number;
  outputTokens: number;
  requests: number;
  seed: number;
  vocabSize?: number;
}

export function sharedPrefixWorkload(o: SharedPrefixOptions): WorkloadRequest[] {
  const vocab = o.vocabSize ?? 32_000;
  const rng = createRng(o.seed);
  const prefixes: Uint32Array[] = [];
  for (let p = 0; p < o.numPrefixes; p++) {
    const t = new Uint32Array(o.prefixTokens);
    for (let i = 0; i < t.length; i++) t[i] = rng.int(vocab);
    prefixes.push(t);
  }
  const out: WorkloadRequest[] = [];
  for (let r = 0; r < o.requests; r++) {
    const prefix = prefixes[rng.int(o.numPrefixes)]!;
    const suffixSeed = rng.nextU32();
    out.push({
      timestampMs: 0,
      inputLength: o.prefixTokens + o.suffixTokens,
      outputLength: o.outputTokens,
      writeTokens: (t) => {
        t.set(prefix);
        // Counter-based so the suffix is rebuilt identically on demand without storing it.
        for (let i = 0; i < o.suffixTokens; i++) t[o.prefixTokens + i] = mix32(suffixSeed ^ Math.imul(i + 1, 0x9e3779b1)) % vocab;
      },
    });
  }
  return out;
}

/** Problems with synthetic options, one line each (flag spellings). */
export function sharedPrefixProblems(o: SharedPrefixOptions): string[] {
  const p: string[] = [];
  if (!(o.numPrefixes >= 1)) p.push(`--num-prefixes: got ${o.numPrefixes}, expected an integer ≥ 1`);
  if (!(o.requests >= 1)) p.push(`--requests: got ${o.requests}, expected an integer ≥ 1`);
  if (!(o.outputTokens >= 1)) p.push(`--output-tokens: got ${o.outputTokens}, expected an integer ≥ 1`);
  if (!(o.prefixTokens + o.suffixTokens >= 1)) p.push("--prefix-tokens + --suffix-tokens must be at least 1");
  return p;
}
