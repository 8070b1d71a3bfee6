// `replay`'s prefill and decode layout: the two pools' sizes, the decode side's pull timing, and the
// comparison of the aggregated and disaggregated layouts on the same total worker count.
import { DEFAULT_KV_TRANSFER_BANDWIDTH_GBPS, KV_TRANSFER_TIMING_MODES, type KvTransferTimingMode } from "./disaggregation.ts";
import { group } from "./options.ts";

export const LAYOUTS = ["agg", "disagg"] as const;

export const replayLayoutOptions = group("Disaggregated prefill and decode", {
  prefillWorkers: { kind: "int", min: 1, max: 100_000, description: "Simulate disaggregated serving: this many prefill workers (placed by KV overlap), with --decode-workers" },
  decodeWorkers: { kind: "int", min: 1, max: 100_000, description: "Decode workers (placed by load) of the disaggregated layout, with --prefill-workers" },
  kvTransferBandwidth: { kind: "number", min: 0, default: DEFAULT_KV_TRANSFER_BANDWIDTH_GBPS, description: "GB/s of a decode worker's KV pull on the virtual clock; 0 = instant" },
  kvTransferTimingMode: { kind: "enum", choices: KV_TRANSFER_TIMING_MODES, default: "full_prompt" as KvTransferTimingMode, description: "What a pull's time counts: the whole prompt (full_prompt) or only the blocks the decode worker lacks (destination_missing)" },
  compareLayouts: {
    kind: "string",
    nonEmpty: true,
    description: "agg,disagg: replay both layouts on the same total (--prefill-workers + --decode-workers aggregated workers against that split), then the verdict",
  },
});

export interface LayoutSettings {
  prefillWorkers?: number | undefined;
  decodeWorkers?: number | undefined;
  compareLayouts?: string | undefined;
  dataParallelSize: number;
  regret: boolean;
  loraReplicas?: number | undefined;
}

export function replayLayoutProblems(c: LayoutSettings): string[] {
  const problems: string[] = [];
  const split = c.prefillWorkers !== undefined || c.decodeWorkers !== undefined;
  if (split && (c.prefillWorkers === undefined || c.decodeWorkers === undefined)) problems.push(`${c.prefillWorkers === undefined ? "--decode-workers" : "--prefill-workers"}: needs ${c.prefillWorkers === undefined ? "--prefill-workers" : "--decode-workers"} too (a disaggregated layout has both pools)`);
  if (c.compareLayouts !== undefined) {
    const names = c.compareLayouts.split(",").map((s) => s.trim());
    const bad = names.find((s) => !(LAYOUTS as readonly string[]).includes(s));
    if (bad !== undefined) problems.push(`--compare-layouts: unknown layout ${JSON.stringify(bad)}, expected ${LAYOUTS.join(", ")}`);
    else if (names.length !== 2 || names[0] === names[1]) problems.push(`--compare-layouts: expected the two layouts, e.g. agg,disagg, got ${JSON.stringify(c.compareLayouts)}`);
    if (!split) problems.push("--compare-layouts: needs --prefill-workers and --decode-workers (the disaggregated split; agg gets their sum)");
  }
  if (split && c.dataParallelSize > 1) problems.push("--data-parallel-size: a disaggregated layout simulates one rank per worker; contradicts --prefill-workers / --decode-workers");
  if (split && c.loraReplicas !== undefined) problems.push("--lora-replicas: a disaggregated layout places no adapters (every worker of each layout holds every adapter); contradicts --prefill-workers / --decode-workers");
  if (split && c.regret) problems.push("--regret: judges one router's decisions; contradicts --prefill-workers / --decode-workers (two routers)");
  return problems;
}

/** The layouts in the order asked (the first is the verdict's baseline). */
export function layoutsOf(compare: string): ("agg" | "disagg")[] {
  return compare.split(",").map((s) => s.trim() as "agg" | "disagg");
}
