// Router hints (`kv_hint`): after a decision, is there a source in the chosen worker's
// KV-transfer domain, advertising router_hint, whose local prefix (device + contiguous host) is
// strictly longer than the chosen one's? The caller passes only such sources; this finds the
// longest. Ties go to the first listed, so the same index state gives the same hint.
import type { KvIndex } from "../index/kv-index.ts";

export interface HintSource {
  source: number;
  /** Blocks of the prompt it holds as a local prefix. */
  blocks: number;
}

/** Device prefix plus the contiguous host continuation of `source` for the prompt. */
export function localPrefix(index: KvIndex, seqHashes: ArrayLike<bigint>, source: number): number {
  const out = new Int32Array(1);
  index.deviceOverlaps(seqHashes, seqHashes.length, [source], out);
  return out[0]! + index.hostContinuation(source, seqHashes, out[0]!, seqHashes.length, "host");
}

export function longerPrefixSource(index: KvIndex, seqHashes: ArrayLike<bigint>, chosenPrefix: number, sources: readonly number[]): HintSource | undefined {
  if (sources.length === 0 || chosenPrefix >= seqHashes.length) return undefined;
  const device = new Int32Array(sources.length);
  index.deviceOverlaps(seqHashes, seqHashes.length, sources, device);
  let best: HintSource | undefined;
  for (let i = 0; i < sources.length; i++) {
    const source = sources[i]!;
    const blocks = device[i]! + index.hostContinuation(source, seqHashes, device[i]!, seqHashes.length, "host");
    if (blocks > chosenPrefix && (best === undefined || blocks > best.blocks)) best = { source, blocks };
  }
  return best;
}
