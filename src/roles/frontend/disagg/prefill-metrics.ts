// The prefill router's counters for /metrics: legs sent per pool, requests conditional
// disaggregation kept on their decode worker, requests that ran aggregated (no prefill worker left,
// every prefill attempt failed, no prefill worker holding the LoRA adapter), and the KV transfers the decode legs imply, estimated from the
// prefill replies' block lists against the router's index (Dynamo's two timing modes).
import type { MetricFamily } from "../../../protocol/prometheus.ts";

export type AggregatedReason = "no_prefill_worker" | "prefill_busy" | "prefill_failed" | "no_transfer_params" | "adapter_not_on_prefill";

export class PrefillRouterMetrics {
  /** Worker requests per leg: prefill (each attempt) and decode (each disaggregated request's decode leg). */
  readonly legs = { prefill: 0, decode: 0 };
  /** Prefill attempts that failed (the next prefill worker, or aggregated, follows). */
  prefillFailures = 0;
  bypasses = 0;
  readonly aggregated: Record<AggregatedReason, number> = { no_prefill_worker: 0, prefill_busy: 0, prefill_failed: 0, no_transfer_params: 0, adapter_not_on_prefill: 0 };
  /** Blocks the prefill replies named (full_prompt) and the ones the chosen decode worker lacked per the index (destination_missing). */
  readonly transferBlocks = { full_prompt: 0, destination_missing: 0 };
  transferTokens = 0;

  families(): MetricFamily[] {
    return [
      { name: "kvcr_frontend_disagg_legs_total", help: "Worker requests of disaggregated requests, per leg: prefill (every attempt) and decode", type: "counter", samples: (["prefill", "decode"] as const).map((leg) => ({ labels: { leg }, value: this.legs[leg] })) },
      { name: "kvcr_frontend_disagg_prefill_failures_total", help: "Prefill legs that failed (sent to the next prefill worker, or run aggregated)", type: "counter", samples: [{ value: this.prefillFailures }] },
      { name: "kvcr_frontend_conditional_disagg_bypasses_total", help: "Requests prefilled on their decode worker by --router-conditional-disagg (sent with x-bypass-remote-prefill)", type: "counter", samples: [{ value: this.bypasses }] },
      {
        name: "kvcr_frontend_disagg_aggregated_total",
        help: "Requests of a model with prefill workers that ran aggregated on a decode worker: no prefill worker left, every prefill worker over its busy thresholds, every prefill attempt failed, the prefill reply carried no kv_transfer_params, or no prefill worker holds the request's LoRA adapter",
        type: "counter",
        samples: (Object.keys(this.aggregated) as AggregatedReason[]).map((reason) => ({ labels: { reason }, value: this.aggregated[reason] })),
      },
      {
        name: "kvcr_frontend_kv_transfer_estimated_blocks_total",
        help: "KV blocks the decode legs pull, estimated: the prefill replies' blocks (full_prompt) or those the chosen decode worker lacks per the router's index (destination_missing)",
        type: "counter",
        samples: (["full_prompt", "destination_missing"] as const).map((timing) => ({ labels: { timing }, value: this.transferBlocks[timing] })),
      },
      { name: "kvcr_frontend_kv_transfer_estimated_tokens_total", help: "Prompt tokens of the KV the decode legs pull (full_prompt blocks × block size)", type: "counter", samples: [{ value: this.transferTokens }] },
    ];
  }
}
