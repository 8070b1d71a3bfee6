// The KV router's cost of sending a request to one (worker, rank), SPEC §6.3:
// prefill_load_scale × max(0, prompt_blocks − device − w_host × host − w_disk × disk) + decode_blocks.
// A host block counts as 3/4 of a device block and a disk block as 1/4 by default (Dynamo's
// router weights): it saves the recompute but still costs a load.

export const HOST_OVERLAP_WEIGHT = 0.75;
export const DISK_OVERLAP_WEIGHT = 0.25;

export interface TierWeights {
  host: number;
  disk: number;
}

export const DEFAULT_TIER_WEIGHTS: TierWeights = { host: HOST_OVERLAP_WEIGHT, disk: DISK_OVERLAP_WEIGHT };

export function kvCost(
  promptBlocks: number,
  deviceOverlap: number,
  hostOverlap: number,
  decodeBlocks: number,
  prefillLoadScale: number,
  diskOverlap = 0,
  weights: TierWeights = DEFAULT_TIER_WEIGHTS,
): number {
  const prefillBlocks = Math.max(0, promptBlocks - deviceOverlap - weights.host * hostOverlap - weights.disk * diskOverlap);
  return prefillLoadScale * prefillBlocks + decodeBlocks;
}
