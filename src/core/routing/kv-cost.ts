// The KV router's cost of sending a request to one (worker, rank), SPEC §6.3:
// prefill_load_scale × max(0, prompt_blocks − device_overlap − 0.75 × host_overlap) + decode_blocks.
// A host block counts as 3/4 of a device block: it saves the recompute but still costs a load.

export const HOST_OVERLAP_WEIGHT = 0.75;

export function kvCost(promptBlocks: number, deviceOverlap: number, hostOverlap: number, decodeBlocks: number, prefillLoadScale: number): number {
  const prefillBlocks = Math.max(0, promptBlocks - deviceOverlap - HOST_OVERLAP_WEIGHT * hostOverlap);
  return prefillLoadScale * prefillBlocks + decodeBlocks;
}
