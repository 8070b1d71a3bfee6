// The router flags (src/config/router.ts) as the core router's options: the one mapping the
// frontend and replay share, so the same flags route the same way live and offline.
import type { routerTuningOptions } from "../../../config/router.ts";
import type { ConfigOf } from "../../../config/options.ts";
import type { RouterOptions } from "../../../core/routing/router-options.ts";
import type { RouterMode } from "../../../protocol/router-modes.ts";

export type RouterConfig = ConfigOf<typeof routerTuningOptions> & { routerMode: RouterMode };

export function routerOptionsFrom(c: RouterConfig): RouterOptions {
  // --router-kv-overlap-score-weight is the old name of the prefill scale; as in Dynamo, setting
  // it to 0 also turns the overlap credit off (pure load balancing). The new flags win.
  const legacy = c.routerKvOverlapScoreWeight;
  return {
    mode: c.routerMode,
    prefillLoadScale: c.routerPrefillLoadScale ?? legacy ?? 1,
    overlapScoreCredit: c.routerKvOverlapScoreCredit ?? (legacy === 0 ? 0 : 1),
    hostWeight: c.routerHostCacheHitWeight,
    diskWeight: c.routerDiskCacheHitWeight,
    temperature: c.routerTemperature,
    busy: {
      activeDecodeBlocks: c.activeDecodeBlocksThreshold,
      activePrefillTokens: c.activePrefillTokensThreshold,
      activePrefillTokensFrac: c.activePrefillTokensThresholdFrac,
    },
    approximateTtlMs: c.routerKvEvents ? undefined : c.routerTtlSecs * 1000,
    queueThreshold: c.routerQueueThreshold,
  };
}

/** One line per router flag that is deprecated or has no effect in this configuration (logged at start). */
export function routerWarnings(c: RouterConfig): string[] {
  const out: string[] = [];
  if (c.routerKvOverlapScoreWeight !== undefined) out.push("--router-kv-overlap-score-weight is deprecated: use --router-prefill-load-scale (and --router-kv-overlap-score-credit 0 for pure load balancing)");
  if (!c.routerKvEvents && c.routerMode !== "kv") out.push(`--no-router-kv-events has no effect with --router-mode ${c.routerMode}`);
  return out;
}
