// The router's options, shared by `frontend` and `replay` so both spell them the same way
// (Dynamo's frontend spellings) and run the same router (src/core/routing). How they combine
// into the router's settings lives in one place: src/roles/shared/routing/router-settings.ts.
// The modes themselves are one table: protocol/router-modes.ts.
import { group } from "./options.ts";

export const routerTuningOptions = group("Router", {
  routerPrefillLoadScale: {
    kind: "number",
    min: 0,
    description: "kv router: weight of a prefill block against a decode block in the cost (default 1)",
  },
  routerKvOverlapScoreWeight: {
    kind: "number",
    min: 0,
    description: "Deprecated alias of --router-prefill-load-scale (0 also sets --router-kv-overlap-score-credit to 0, as Dynamo)",
  },
  routerKvOverlapScoreCredit: {
    kind: "number",
    min: 0,
    description: "kv router: how much one device-cached prompt block lowers the prefill cost (default 1)",
  },
  routerHostCacheHitWeight: { kind: "number", min: 0, max: 1, default: 0.75, description: "kv router: a host-tier (G2) block's share of a device block in the cost" },
  routerDiskCacheHitWeight: { kind: "number", min: 0, max: 1, default: 0.25, description: "kv router: a disk-tier block's share of a device block in the cost" },
  routerTemperature: { kind: "number", min: 0, default: 0, description: "kv router: 0 = lowest cost; > 0 samples a softmax over normalised costs" },
  routerKvEvents: {
    kind: "bool",
    default: true,
    description: "kv router: follow the workers' KV events; --no-router-kv-events predicts each worker's cache from the router's own decisions (for backends without events)",
  },
  routerTtlSecs: { kind: "number", min: 0.001, default: 120, description: "With --no-router-kv-events: seconds a routed prompt's blocks count as cached on their worker" },
  activeDecodeBlocksThreshold: {
    kind: "number",
    min: 0,
    max: 1,
    description: "A (worker, rank) is busy while its in-flight prompts hold more than this share of its G1 blocks; a worker whose ranks are all busy is skipped (unset: never)",
  },
  activePrefillTokensThreshold: {
    kind: "int",
    min: 0,
    description: "A (worker, rank) is busy while more than this many routed prompt tokens await their first token (unset: never)",
  },
  routerQueueThreshold: {
    kind: "number",
    min: 0,
    description: "Hold requests in a queue (instead of routing them) while every (worker, rank)'s outstanding prefill exceeds this share of its max_num_batched_tokens (unset: never)",
  },
  activePrefillTokensThresholdFrac: {
    kind: "number",
    min: 0,
    description: "As --active-prefill-tokens-threshold, as a share of the rank's max_num_batched_tokens (unset: never)",
  },
});
