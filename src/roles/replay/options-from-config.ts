// Resolved `replay` config → the replay role's options (router and engine flags → the simulated stack).
import { layoutsOf } from "../../config/replay-layouts.ts";
import type { ReplayConfig } from "../../config/replay.ts";
import { simulatedStackFrom } from "../shared/measure/simulated-stack.ts";
import { arrivalOptionsFrom, workloadOptionsFrom } from "../shared/measure/workload.ts";
import type { ReplayOptions } from "./run-replay.ts";

export function replayOptionsFrom(c: ReplayConfig): ReplayOptions {
  return {
    ...workloadOptionsFrom(c),
    ...arrivalOptionsFrom(c),
    ...simulatedStackFrom(c),
    outputJson: c.outputJson,
    regret: c.regret,
    ...(c.prefillWorkers !== undefined && c.decodeWorkers !== undefined
      ? {
          layout: {
            prefillWorkers: c.prefillWorkers,
            decodeWorkers: c.decodeWorkers,
            kvTransferBandwidthGbps: c.kvTransferBandwidth,
            kvTransferTimingMode: c.kvTransferTimingMode,
            ...(c.compareLayouts !== undefined ? { compare: layoutsOf(c.compareLayouts) } : {}),
          },
        }
      : {}),
  };
}
