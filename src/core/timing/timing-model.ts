// Step-time models: the polynomial fit (default, the one Dynamo's mocker ships), a fixed model,
// and a measured profile's tables. Times are in milliseconds of model time; speedup ratios divide them.
import { ProfileTimer } from "./profile-timer.ts";
import { ParametricTimer } from "./parametric-timer.ts";
import type { TimingProfile } from "../../protocol/timing-profile.ts";
import type { StepShape, StepTimer } from "./step-timer.ts";

export type { StepShape, StepTimer } from "./step-timer.ts";

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

/** The timer of a profile; `warn` hears a table's extrapolation once per axis. */
export function stepTimerOf(profile: TimingProfile, extrapolate: boolean, warn?: (message: string, key: string) => void): StepTimer {
  return profile.form === "parametric" ? new ParametricTimer(profile.parametric) : new ProfileTimer(profile, { extrapolate, ...(warn ? { warn } : {}) });
}

/** The profile's timer for a config (undefined for the other models). */
export function profileTimerFor(cfg: TimingConfig, warn?: (message: string, key: string) => void): StepTimer | undefined {
  if (cfg.timingModel !== TimingModelKind.profile || cfg.timingProfile === undefined) return undefined;
  return stepTimerOf(cfg.timingProfile, cfg.timingExtrapolate === true, warn);
}

/** A profile step: its prefill part plus its decode part, each speedup dividing as it does for the other models. */
export function profileStepMs(cfg: TimingConfig, timer: StepTimer, s: StepShape): number {
  if (cfg.speedupRatio === 0) return 0;
  return (timer.prefillPartMs(s) + timer.decodePartMs(s) / cfg.decodeSpeedupRatio) / cfg.speedupRatio;
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
