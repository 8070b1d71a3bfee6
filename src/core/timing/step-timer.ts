// What prices a step from a profile, and the step's shape it prices: the engine fills the shape,
// the tables (profile-timer.ts) or the parametric model (parametric-timer.ts) price it.

/** What a profile prices in one step: the prefill part and the decode batch (the engine's step fills it). */
export interface StepShape {
  prefillTokens: number;
  /** Computed tokens before the prefilled ones, summed over prefill tokens (÷ prefillTokens = mean context). */
  prefillContextTokenProduct: number;
  /** Each prefilled token's position within its own chunk (1-based), summed: the chunk's attention to itself. */
  prefillSelfPairs: number;
  decodeRequests: number;
  /** Context tokens the decoding requests attend, summed. */
  decodeContextTokens: number;
}

/** What prices a step from a profile: its tables (profile-timer.ts) or its parametric model (parametric-timer.ts). */
export interface StepTimer {
  /** Model ms a request waits after it arrives before it can be scheduled. */
  readonly requestMs: number;
  /** Why a request would ask the profile past its range (refused at admission), or undefined. */
  contextRefusal(promptLen: number, maxTokens: number): string | undefined;
  /** The step's prefill part (model ms): what a decode speedup does not divide. */
  prefillPartMs(s: StepShape): number;
  /** The step's decode part (model ms). */
  decodePartMs(s: StepShape): number;
  /** One pass prefilling `tokens` after `context` computed ones, alone (regret pricing). */
  prefillMs(tokens: number, context: number): number;
}
