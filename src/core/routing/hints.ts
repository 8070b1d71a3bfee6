// Router hints (`kv_hint`): after a decision, is there a rank in the chosen worker's
// KV-transfer domain, advertising router_hint, whose local prefix (device + contiguous host) is
// strictly longer than the chosen one's? The caller passes only such ranks' ids; this finds the
// longest. Ties go to the first listed, so the same index state gives the same hint.
import type { KvIndex } from "../index/kv-index.ts";

export interface HintRank {
  rankId: number;
  /** Blocks of the prompt it holds as a local prefix. */
  blocks: number;
}

/** Device prefix plus the contiguous host continuation of `rankId` for the prompt. */
export function localPrefix(index: KvIndex, seqHashes: ArrayLike<bigint>, rankId: number): number {
  const out = new Int32Array(1);
  index.deviceOverlaps(seqHashes, seqHashes.length, [rankId], out);
  return out[0]! + index.hostContinuation(rankId, seqHashes, out[0]!, seqHashes.length, "host");
}

export function longerPrefixRank(index: KvIndex, seqHashes: ArrayLike<bigint>, chosenPrefix: number, rankIds: readonly number[]): HintRank | undefined {
  if (rankIds.length === 0 || chosenPrefix >= seqHashes.length) return undefined;
  const device = new Int32Array(rankIds.length);
  index.deviceOverlaps(seqHashes, seqHashes.length, rankIds, device);
  let best: HintRank | undefined;
  for (let i = 0; i < rankIds.length; i++) {
    const rankId = rankIds[i]!;
    const blocks = device[i]! + index.hostContinuation(rankId, seqHashes, device[i]!, seqHashes.length, "host");
    if (blocks > chosenPrefix && (best === undefined || blocks > best.blocks)) best = { rankId, blocks };
  }
  return best;
}
