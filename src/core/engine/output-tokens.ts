// Deterministic output tokens (same seed, same run). Token i of a request is a pure
// function of (seed, prompt, i), like greedy decoding: identical prompts generate identical
// continuations whatever the batching or arrival timing, so a run replays exactly and
// generated blocks are shared the way a real greedy model's would be.
import { mix32, seedHigh } from "../random/rng.ts";

/**
 * Folds a prompt into a 32-bit key cheaply: the last full block's sequence hash already
 * identifies every token before it, so only the partial tail is read token by token.
 */
export function outputKey(seed: number, tokens: Uint32Array, promptLen: number, blockSize: number, lastFullSeqHash: bigint | undefined): number {
  let k = mix32((seed >>> 0) ^ 0x5bd1e995);
  const hi = seedHigh(seed); // seeds from 2^32 on (keys of smaller seeds unchanged)
  if (hi !== 0) k = mix32(k ^ hi ^ 0x27d4eb2f);
  k = mix32(k ^ promptLen);
  let from = 0;
  if (lastFullSeqHash !== undefined) {
    k = mix32(k ^ Number(lastFullSeqHash & 0xffffffffn));
    k = mix32(k ^ Number(lastFullSeqHash >> 32n));
    from = Math.floor(promptLen / blockSize) * blockSize;
  }
  for (let i = from; i < promptLen; i++) k = mix32(k ^ tokens[i]!);
  return k;
}

/** Output token `index` (0-based) of the request with `key`, in [0, vocabSize). */
export function outputToken(key: number, index: number, vocabSize: number): number {
  return mix32(key ^ Math.imul(index + 1, 0x9e3779b1)) % vocabSize;
}
