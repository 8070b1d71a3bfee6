// Step-time models: the polynomial fit (default, the one Dynamo's mocker ships), a fixed model,
// and a measured profile's tables. Times are in milliseconds of model time; speedup ratios divide them.
import { ProfileTimer } from "./profile-timer.ts";
import type { TimingProfile } from "../../protocol/timing-profile.ts";

export const TimingModelKind = { polynomial: "polynomial", fixed: "fixed", profile: "profile" } as const;
export type TimingModelKind = (typeof TimingModelKind)[keyof typeof TimingModelKind];

export interface TimingConfig {
  timingModel: TimingModelKind;
  /** Fixed model: time of a step that prefills anything. */
  prefillMs: number;
  /** Fixed model: time of a step that emits any token (decodes, or ends a prefill). */
  decodeMs: number;
  /** Divides all times; 0 = as fast as possible (every step takes 0 ms). */
  speedupRatio: number;
  /** Further divides decode time (> 0). */
  decodeSpeedupRatio: number;
  /** Profile model: the tables (docs/timing.md). */
  timingProfile?: TimingProfile;
  /** Profile model: past a table's last point, extrapolate (warned once) instead of refusing. */
  timingExtrapolate?: boolean;
}

/** What a profile prices in one step: the prefill part and the decode batch (the engine's step fills it). */
export interface StepShape {
  prefillTokens: number;
  /** Computed tokens before the prefilled ones, summed over prefill tokens (÷ prefillTokens = mean context). */
  prefillContextTokenProduct: number;
  decodeRequests: number;
  /** Context tokens the decoding requests attend, summed. */
  decodeContextTokens: number;
}

/** The profile's timer for a config (undefined for the other models); `warn` hears extrapolation once per axis. */
export function profileTimerFor(cfg: TimingConfig, warn?: (message: string, key: string) => void): ProfileTimer | undefined {
  if (cfg.timingModel !== TimingModelKind.profile || cfg.timingProfile === undefined) return undefined;
  return new ProfileTimer(cfg.timingProfile, { extrapolate: cfg.timingExtrapolate === true, ...(warn ? { warn } : {}) });
}

/**
 * A profile step: its prefill table at the mean context of the prefilled tokens, plus its decode
 * table for the decoding requests (a prefill's first token is part of its pass, as in the
 * measured forward passes), added as Dynamo's mocker adds them; decode at least 1 ms as there.
 */
export function profileStepMs(cfg: TimingConfig, timer: ProfileTimer, s: StepShape): number {
  if (cfg.speedupRatio === 0) return 0;
  const prefill = s.prefillTokens > 0 ? timer.prefillMs(s.prefillTokens, s.prefillContextTokenProduct / s.prefillTokens) : 0;
  const decode = s.decodeRequests > 0 ? Math.max(1, timer.decodeMs(s.decodeRequests, s.decodeContextTokens)) : 0;
  return (prefill + decode / cfg.decodeSpeedupRatio) / cfg.speedupRatio;
}

/** Prefill time for `newTokens` prefilled tokens in one step (0 when none). */
export function polynomialPrefillMs(newTokens: number): number {
  if (newTokens <= 0) return 0;
  return 4.209989e-7 * newTokens * newTokens + 0.01518344 * newTokens + 16.50142;
}

/** Decode time at KV load `p` = active blocks / total G1 blocks (floored at 1 ms). */
export function polynomialDecodeMs(p: number): number {
  return Math.max(1, -25.74 * p * p + 54.01 * p + 5.74);
}

/**
 * Duration of one engine step: prefill part (if `prefillTokens` > 0) plus decode part (if
 * `emittingRequests` > 0), decode divided by the decode speedup, everything by the speedup.
 * `emittingRequests` counts the requests that sample a token in the step: the decoding ones and
 * those whose prefill ends in it (their first token), as Dynamo's mocker charges decode in any
 * pass that emits a token. A prefill chunk short of the prompt's end pays prefill only.
 */
export function stepDurationMs(cfg: TimingConfig, prefillTokens: number, emittingRequests: number, kvLoad: number): number {
  if (cfg.speedupRatio === 0) return 0;
  let prefill = 0;
  let decode = 0;
  if (cfg.timingModel === TimingModelKind.fixed) {
    if (prefillTokens > 0) prefill = cfg.prefillMs;
    if (emittingRequests > 0) decode = cfg.decodeMs;
  } else {
    prefill = polynomialPrefillMs(prefillTokens);
    if (emittingRequests > 0) decode = polynomialDecodeMs(kvLoad);
  }
  return (prefill + decode / cfg.decodeSpeedupRatio) / cfg.speedupRatio;
}
