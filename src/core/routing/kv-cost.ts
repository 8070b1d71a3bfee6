// The KV router's cost of sending a request to one (worker, rank), Dynamo's load model
// (docs/ARCHITECTURE.md "Routing"):
//   prefill = prefill_load_scale × max(0, (active_prefill_tokens + isl) / block_size − overlap_credit)
//   overlap_credit = credit × device + w_host × host + w_disk × disk   (from the index only)
//   decode  = active_blocks + new_blocks
// where active_blocks counts the distinct blocks of the candidate's in-flight prompts and
// new_blocks the prompt's full blocks beyond its longest prefix already active there. A host
// block counts 3/4 of a device block and a disk block 1/4 by default (Dynamo's weights): it saves
// the recompute but still costs a load. Blocks are fractional.

export const HOST_OVERLAP_WEIGHT = 0.75;
export const DISK_OVERLAP_WEIGHT = 0.25;

export interface CostWeights {
  /** Weight of prefill blocks against decode blocks (--router-prefill-load-scale). */
  prefillLoadScale: number;
  /** A device-cached block's credit against prefill (--router-kv-overlap-score-credit). */
  overlapCredit: number;
  host: number;
  disk: number;
}

export const DEFAULT_COST_WEIGHTS: CostWeights = { prefillLoadScale: 1, overlapCredit: 1, host: HOST_OVERLAP_WEIGHT, disk: DISK_OVERLAP_WEIGHT };

/** What the router knows of one candidate for one request. */
export interface CandidateLoad {
  promptTokens: number;
  blockSize: number;
  /** Index overlap per tier, in blocks (device prefix, then the host and disk continuations). */
  device: number;
  host: number;
  disk: number;
  activeBlocks: number;
  activePrefillTokens: number;
  /** The prompt's full blocks beyond its longest prefix already active on the candidate. */
  newBlocks: number;
}

export function prefillBlocks(c: CandidateLoad, w: CostWeights = DEFAULT_COST_WEIGHTS): number {
  const credit = w.overlapCredit * c.device + w.host * c.host + w.disk * c.disk;
  return w.prefillLoadScale * Math.max(0, (c.activePrefillTokens + c.promptTokens) / c.blockSize - credit);
}

export function kvCost(c: CandidateLoad, w: CostWeights = DEFAULT_COST_WEIGHTS): number {
  return prefillBlocks(c, w) + c.activeBlocks + c.newBlocks;
}

/**
 * Prefill tokens a routed request adds to its candidate's outstanding prefill: the prompt less
 * what the index said was cached there (each tier at its weight; the credit does not apply).
 */
export function uncachedPromptTokens(promptTokens: number, blockSize: number, device: number, host: number, disk: number, w: CostWeights = DEFAULT_COST_WEIGHTS): number {
  return Math.max(0, promptTokens - Math.round((device + w.host * host + w.disk * disk) * blockSize));
}
