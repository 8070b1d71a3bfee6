// The KV router's tuning options (SPEC §6.3), shared by `frontend` and `replay` so both spell
// them the same way (Dynamo frontend spellings) and run the same router (src/core/routing).
import { defineOptions } from "./options.ts";

export const ROUTER_MODES = ["round-robin", "random", "kv"] as const;

export const routerTuningOptions = defineOptions({
  routerKvOverlapScoreWeight: {
    kind: "number",
    min: 0,
    default: 1,
    description: "kv router: weight of prefill blocks against decode blocks (SPEC §6.3 prefill_load_scale)",
  },
  routerHostCacheHitWeight: { kind: "number", min: 0, max: 1, default: 0.75, description: "kv router: a host-tier (G2) block's share of a device block in the cost" },
  routerDiskCacheHitWeight: { kind: "number", min: 0, max: 1, default: 0.25, description: "kv router: a disk-tier block's share of a device block in the cost" },
  routerTemperature: { kind: "number", min: 0, default: 0, description: "kv router: 0 = lowest cost; > 0 samples a softmax over normalised costs" },
  activeDecodeBlocksThreshold: {
    kind: "number",
    min: 0,
    max: 1,
    description: "kv router: skip (worker, rank)s whose active blocks exceed this share of their G1 while others are below",
  },
});
