// Disaggregated prefill and decode options of the mocker (Dynamo's --disaggregation-mode, vLLM's
// NixlConnector hold timeout) and their cross-field rules: each setting belongs to one side, so
// naming it for a worker of the other side (or an aggregated one) is refused, not silently unused.
import { group } from "./options.ts";

export const DISAGGREGATION_MODES = ["agg", "prefill", "decode"] as const;
export type DisaggregationMode = (typeof DISAGGREGATION_MODES)[number];
export const KV_TRANSFER_TIMING_MODES = ["full_prompt", "destination_missing"] as const;
export type KvTransferTimingMode = (typeof KV_TRANSFER_TIMING_MODES)[number];

/** GB/s of a KV transfer when --kv-transfer-bandwidth is not given (an NVLink-class path). */
export const DEFAULT_KV_TRANSFER_BANDWIDTH_GBPS = 64;
export const DEFAULT_KV_TRANSFER_TIMING_MODE: KvTransferTimingMode = "full_prompt";
/** vLLM's VLLM_NIXL_ABORT_REQUEST_TIMEOUT default: a prefill's blocks are freed after 480 s unpulled. */
export const DEFAULT_KV_TRANSFER_HOLD_TIMEOUT_S = 480;

export const disaggregationOptions = group("Disaggregated prefill and decode", {
  disaggregationMode: {
    kind: "enum",
    choices: DISAGGREGATION_MODES,
    default: "agg",
    description: "agg (prefill and decode here), prefill (answer do_remote_decode requests with the KV's pull params) or decode (pull a do_remote_prefill request's KV from its prefill worker)",
  },
  kvTransferBandwidth: { kind: "number", min: 0, description: `Decode side: GB/s of a KV pull on the model clock; 0 = instant (default ${DEFAULT_KV_TRANSFER_BANDWIDTH_GBPS})` },
  kvTransferTimingMode: {
    kind: "enum",
    choices: KV_TRANSFER_TIMING_MODES,
    description: "Decode side: what a pull's time counts, the whole prompt (full_prompt, the default) or only the blocks this worker lacks (destination_missing)",
  },
  kvTransferHoldTimeout: {
    kind: "number",
    min: 0.001,
    description: `Prefill side: seconds a finished request's blocks stay held for the decode worker to pull, then freed and counted (default ${DEFAULT_KV_TRANSFER_HOLD_TIMEOUT_S}, vLLM's)`,
  },
  kvTransferPort: { kind: "int", min: 0, max: 65535, description: "Prefill side: port of the KV transfer endpoint decode workers pull from (default 0 = pick; advertised in discovery)" },
});

export interface DisaggregationSettings {
  disaggregationMode: DisaggregationMode;
  kvTransferBandwidth?: number | undefined;
  kvTransferTimingMode?: KvTransferTimingMode | undefined;
  kvTransferHoldTimeout?: number | undefined;
  kvTransferPort?: number | undefined;
}

const DECODE_ONLY = [
  ["kvTransferBandwidth", "--kv-transfer-bandwidth"],
  ["kvTransferTimingMode", "--kv-transfer-timing-mode"],
] as const;
const PREFILL_ONLY = [
  ["kvTransferHoldTimeout", "--kv-transfer-hold-timeout"],
  ["kvTransferPort", "--kv-transfer-port"],
] as const;

/** Each contradiction names both flags. */
export function disaggregationProblems(c: DisaggregationSettings & { runtime?: string }): string[] {
  const problems: string[] = [];
  const mode = c.disaggregationMode;
  for (const [key, flag] of DECODE_ONLY) {
    // Dynamo's prefill worker takes the bandwidth too: it tells its decode workers in the hand-over.
    if (key === "kvTransferBandwidth" && c.runtime === "dynamo" && mode === "prefill") continue;
    if (c[key] !== undefined && mode !== "decode") problems.push(`${flag}: a decode worker's setting (it times the pull), contradicts --disaggregation-mode ${mode}`);
  }
  for (const [key, flag] of PREFILL_ONLY) {
    if (c[key] !== undefined && mode !== "prefill") problems.push(`${flag}: a prefill worker's setting (it holds and serves the KV), contradicts --disaggregation-mode ${mode}`);
  }
  return problems;
}
