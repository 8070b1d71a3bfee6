// The `generate` endpoint's payloads as Dynamo's frontend sends and reads them (captured:
// test/fixtures/dynamo-1.6.1/request-plane.json, response-plane.json): a PreprocessedRequest in
// (token ids, stop conditions, routing; unknown fields ignored and counted), and each response item
// `{data: {data: LLMEngineOutput}, complete_final: false}`, then `{complete_final: true}`. A
// disaggregated leg carries `bootstrap_info` (both legs at once: protocol/dynamo/bootstrap.ts) or,
// on the decode leg after the prefill has answered, `prefill_result` with the prefill worker's
// `disaggregated_params` (captured: disagg-bootstrap.json, disagg-no-bootstrap.json).
import { parseBootstrapInfo, type BootstrapInfo } from "./bootstrap.ts";

export interface DynamoGenerate {
  tokenIds: number[];
  /** Undefined: the request set none (the worker's limit applies). */
  maxTokens: number | undefined;
  dpRank: number | undefined;
  loraName: string | undefined;
  /** Both legs of a disaggregated request sent at once: where they meet. */
  bootstrap: BootstrapInfo | undefined;
  /** The decode leg after its prefill: what the prefill worker answered (opaque to the frontend). */
  disaggregatedParams: unknown;
  /** A router hint (`kv_hint`): logged by the worker, never acted on. */
  kvHint: Record<string, unknown> | undefined;
  /** Top-level fields this worker does not read (a newer frontend's): ignored, counted. */
  unknownFields: string[];
}

const KNOWN = new Set([
  "model", "token_ids", "stop_conditions", "sampling_options", "output_options", "eos_token_ids", "mdc_sum", "annotations", "routing",
  "router_config_override", "prefill_result", "bootstrap_info", "extra_args", "mm_routing_info", "multi_modal_data", "prompt_embeds",
  "kv_hint", "tracker", "request_timestamp_ms", "estimated_prefix_hit_num_blocks", "backend_instance_id", "batch_token_ids", "lora_name",
]);

export type Parsed<T> = { ok: true; value: T } | { ok: false; problem: string };

const isCount = (v: unknown): v is number => typeof v === "number" && Number.isInteger(v) && v >= 0;

export function parseDynamoGenerate(body: unknown, maxPromptTokens: number): Parsed<DynamoGenerate> {
  if (typeof body !== "object" || body === null || Array.isArray(body)) return { ok: false, problem: "generate request must be an object" };
  const b = body as Record<string, unknown>;
  const ids = b.token_ids;
  if (!Array.isArray(ids) || ids.length === 0) return { ok: false, problem: "generate request: token_ids must be a non-empty array" };
  if (ids.length > maxPromptTokens) return { ok: false, problem: `generate request: ${ids.length} prompt tokens exceed the limit of ${maxPromptTokens}` };
  for (let i = 0; i < ids.length; i++) {
    if (!isCount(ids[i]) || (ids[i] as number) > 0xffff_ffff) return { ok: false, problem: `generate request: token_ids[${i}] is not a u32` };
  }
  const stop = (b.stop_conditions ?? {}) as Record<string, unknown>;
  const maxTokens = stop.max_tokens ?? undefined;
  if (maxTokens !== undefined && maxTokens !== null && !isCount(maxTokens)) return { ok: false, problem: "generate request: stop_conditions.max_tokens is not a count" };
  const routing = (b.routing ?? {}) as Record<string, unknown>;
  const dpRank = routing.dp_rank ?? undefined;
  if (dpRank !== undefined && dpRank !== null && !isCount(dpRank)) return { ok: false, problem: "generate request: routing.dp_rank is not a count" };
  const lora = routing.lora_name ?? b.lora_name;
  const bootstrap = parseBootstrapInfo(b.bootstrap_info);
  if (!bootstrap.ok) return bootstrap;
  const prefill = b.prefill_result;
  if (prefill !== undefined && prefill !== null && (typeof prefill !== "object" || Array.isArray(prefill))) return { ok: false, problem: "generate request: prefill_result must be an object" };
  return {
    ok: true,
    value: {
      tokenIds: ids as number[],
      maxTokens: (maxTokens as number | null | undefined) ?? undefined,
      dpRank: (dpRank as number | null | undefined) ?? undefined,
      loraName: typeof lora === "string" ? lora : undefined,
      bootstrap: bootstrap.value,
      disaggregatedParams: (prefill as Record<string, unknown> | null | undefined)?.disaggregated_params ?? undefined,
      kvHint: typeof b.kv_hint === "object" && b.kv_hint !== null && !Array.isArray(b.kv_hint) ? (b.kv_hint as Record<string, unknown>) : undefined,
      unknownFields: Object.keys(b).filter((k) => !KNOWN.has(k)),
    },
  };
}

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  cached_tokens: number;
}

const completionUsage = (u: Usage) => ({
  prompt_tokens: u.prompt_tokens,
  completion_tokens: u.completion_tokens,
  total_tokens: u.prompt_tokens + u.completion_tokens,
  prompt_tokens_details: { cached_tokens: u.cached_tokens },
});

/** One response item: new tokens, and on the last one its finish reason and usage. */
export function engineOutputItem(tokenIds: readonly number[], finish?: { reason: "length" | "stop" | "cancelled"; usage: Usage }): Record<string, unknown> {
  const data: Record<string, unknown> = { token_ids: tokenIds };
  if (finish) {
    data.finish_reason = finish.reason;
    data.completion_usage = completionUsage(finish.usage);
  }
  return { data: { data }, complete_final: false };
}

/** A prefill leg's token item: its one token with the params the decode leg will be handed, and the usage. */
export function prefillOutputItem(tokenIds: readonly number[], disaggregatedParams: unknown, usage: Usage): Record<string, unknown> {
  return { data: { data: { token_ids: tokenIds, disaggregated_params: disaggregatedParams, completion_usage: completionUsage(usage) } }, complete_final: false };
}

/** An error item: the request failed after its stream began. */
export const errorItem = (message: string) => ({ data: { event: "error", comment: [message] }, complete_final: false });

export const COMPLETE_FINAL = { complete_final: true } as const;
