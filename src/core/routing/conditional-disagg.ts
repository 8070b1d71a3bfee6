// Conditional disaggregation's isl_bounding policy (Dynamo's): a request is prefilled locally on
// its decode worker, skipping the prefill worker and the KV transfer, when the prompt that worker
// would still compute (the effective ISL: prompt − cached prefix there) is small in absolute terms
// and small as a share of the prompt. Both thresholds are strict, as Dynamo's.

/** The two thresholds (defaults, Dynamo's 2048 tokens and 0.7: src/config/conditional-disagg.ts). */
export interface IslBounding {
  effIslThreshold: number;
  effIslRatioThreshold: number;
}

export interface BypassInput {
  promptTokens: number;
  /** Device blocks of the prompt the chosen decode worker already holds. */
  overlapBlocks: number;
  blockSize: number;
}

/** The prompt tokens the decode worker would compute itself (never below 0). */
export function effectiveIsl(x: BypassInput): number {
  return Math.max(0, x.promptTokens - x.overlapBlocks * x.blockSize);
}

/** True: prefill on the decode worker (bypass the remote prefill). */
export function shouldBypassRemotePrefill(x: BypassInput, p: IslBounding): boolean {
  if (x.promptTokens === 0) return true;
  const eff = effectiveIsl(x);
  return eff < p.effIslThreshold && eff / x.promptTokens < p.effIslRatioThreshold;
}
