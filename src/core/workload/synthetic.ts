// Synthetic shared-prefix workload: `numPrefixes` random prefixes of `prefixTokens`,
// each request one of them (chosen at random) plus its own `suffixTokens` random tokens, asking
// for `outputTokens`. Seeded: the same options give the same prompts.
import { createRng, mix32, type Rng } from "../random/rng.ts";
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
  const prefixes = randomPrefixes(rng, o.numPrefixes, o.prefixTokens, vocab);
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
        writeSeededTokens(suffixSeed, vocab, t, o.prefixTokens, o.suffixTokens);
      },
    });
  }
  return out;
}

/** `count` random prompts of `tokens` tokens each, drawn from `rng` in order (the shared prefixes). */
export function randomPrefixes(rng: Rng, count: number, tokens: number, vocab: number): Uint32Array[] {
  const prefixes: Uint32Array[] = [];
  for (let p = 0; p < count; p++) {
    const t = new Uint32Array(tokens);
    for (let i = 0; i < t.length; i++) t[i] = rng.int(vocab);
    prefixes.push(t);
  }
  return prefixes;
}

/** Writes `count` tokens from `seed` at `out[from]`: counter-based, so a segment is rebuilt identically on demand, never stored. */
export function writeSeededTokens(seed: number, vocab: number, out: Uint32Array, from: number, count: number): void {
  for (let i = 0; i < count; i++) out[from + i] = mix32(seed ^ Math.imul(i + 1, 0x9e3779b1)) % vocab;
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
