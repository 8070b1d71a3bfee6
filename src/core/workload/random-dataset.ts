// vLLM's `random` dataset (`vllm bench serve --dataset-name random`), without a tokenizer: each
// request's sampled input length is uniform over the integers [floor(L·(1−r)), ceil(L·(1+r))]
// and its output length over [max(1, floor(O·(1−r))), max(1, ceil(O·(1+r)))], r the range ratio
// in [0, 1); a `prefixLen`-token random prefix shared by every request comes first (total input =
// prefix + sampled), and the rest is vLLM's sequence (offset + index + k) mod vocab. Seeded.
import { createRng } from "../random/rng.ts";
import type { WorkloadRequest } from "./workload.ts";

export interface RandomDatasetOptions {
  inputLen: number;
  outputLen: number;
  prefixLen: number;
  rangeRatio: number;
  requests: number;
  seed: number;
  vocabSize?: number;
}

/** The closed integer ranges lengths are drawn from, as vLLM computes them. */
export function randomLengthRanges(o: Pick<RandomDatasetOptions, "inputLen" | "outputLen" | "rangeRatio">): { input: [number, number]; output: [number, number] } {
  const r = o.rangeRatio;
  return {
    input: [Math.floor(o.inputLen * (1 - r)), Math.ceil(o.inputLen * (1 + r))],
    output: [Math.max(1, Math.floor(o.outputLen * (1 - r))), Math.max(1, Math.ceil(o.outputLen * (1 + r)))],
  };
}

export function randomDataset(o: RandomDatasetOptions): WorkloadRequest[] {
  const vocab = o.vocabSize ?? 32_000;
  const rng = createRng(o.seed);
  const { input, output } = randomLengthRanges(o);
  const between = ([lo, hi]: [number, number]) => lo + rng.int(hi - lo + 1);
  const prefix = Uint32Array.from({ length: o.prefixLen }, () => rng.int(vocab));
  const out: WorkloadRequest[] = [];
  for (let i = 0; i < o.requests; i++) {
    const sampled = between(input);
    const outputLength = between(output);
    const offset = rng.int(vocab);
    out.push({
      timestampMs: 0,
      inputLength: o.prefixLen + sampled,
      outputLength,
      writeTokens: (t) => {
        t.set(prefix);
        for (let k = 0; k < sampled; k++) t[o.prefixLen + k] = (offset + i + k) % vocab;
      },
    });
  }
  return out;
}

/** Problems with the options, one line each (vLLM's flag spellings). */
export function randomDatasetProblems(o: Omit<RandomDatasetOptions, "requests" | "seed">): string[] {
  const p: string[] = [];
  if (!(o.rangeRatio >= 0 && o.rangeRatio < 1)) p.push(`--random-range-ratio: got ${o.rangeRatio}, expected a number in [0, 1)`);
  else if (o.prefixLen + randomLengthRanges(o).input[0] < 1) {
    p.push(`--random-input-len: the shortest possible prompt (--random-prefix-len ${o.prefixLen} + floor(${o.inputLen} × (1 − ${o.rangeRatio}))) has no token; raise --random-input-len or --random-prefix-len, or lower --random-range-ratio`);
  }
  return p;
}
