// Discovery record payloads (docs/ARCHITECTURE.md, Discovery): worker instances and attachment
// intents. Readers validate with these schemas; a bad record is ignored with a warning naming the
// field.
import * as v from "valibot";

export const EVENT_MODES = { direct: "direct", stateAgent: "state_agent_v2" } as const;
export type EventMode = (typeof EVENT_MODES)[keyof typeof EVENT_MODES];

export const INGRESS_PROTOCOL = "vllm_residency_v1" as const;

const endpoint = v.pipe(v.string(), v.regex(/^tcp:\/\/(\[[0-9a-fA-F:.]+\]|[^:/\s]+):\d{1,5}$/, "expected tcp://HOST:PORT"));
const cacheOwnerId = v.pipe(v.string(), v.regex(/^[0-9a-f]{32}:[0-9a-f]{32}\/[0-9a-f]{16}\/[0-9a-f]{32}$/, "expected a canonical CacheOwner id"));
const count = v.pipe(v.number(), v.integer(), v.minValue(0));

export const WorkerRecordSchema = v.object({
  worker_id: v.pipe(v.string(), v.nonEmpty()),
  worker_index: count,
  model: v.pipe(v.string(), v.nonEmpty()),
  worker_type: v.literal("mocker"),
  request_url: v.pipe(v.string(), v.url()),
  data_parallel_size: v.pipe(count, v.minValue(1)),
  block_size: v.pipe(count, v.minValue(1)),
  total_gpu_blocks: count,
  total_host_blocks: count,
  /** Per rank (as Dynamo's runtime config): the router's prefill-tokens busy fraction is of this. */
  max_num_batched_tokens: v.optional(v.pipe(count, v.minValue(1))),
  /** vLLM's max_model_len: the frontend refuses prompt + max_tokens above it (400). Optional: older records lack it. */
  max_model_len: v.optional(v.pipe(count, v.minValue(1))),
  kv_event_source_mode: v.picklist([EVENT_MODES.direct, EVENT_MODES.stateAgent]),
  /** Direct mode: the worker's router-event stream (router-events.ts); absent in state-agent mode. */
  router_events_endpoint: v.optional(endpoint),
  raw_endpoints: v.array(endpoint),
  replay_endpoints: v.optional(v.array(endpoint)),
  raw_topic: v.string(),
  cache_owner_ids: v.optional(v.array(cacheOwnerId)),
  capabilities: v.array(v.string()),
  router_hint_sources: v.optional(v.array(v.object({ cache_owner_id: cacheOwnerId, source_control_endpoint: endpoint }))),
  kv_transfer_domain: v.optional(v.string()),
  topology: v.record(v.string(), v.string()),
  /** LoRA adapters the worker has loaded (vLLM's lora_name), updated on load and unload; absent = none. */
  lora_adapters: v.optional(v.array(v.pipe(v.string(), v.nonEmpty()))),
  /** The worker's own vLLM OpenAI API (mocker --openai-port-base), for routers other than the frontend. */
  openai_url: v.optional(v.pipe(v.string(), v.url())),
  /** Dynamo's disaggregation mode of a prefill or decode worker (absent: aggregated). */
  disaggregation_mode: v.optional(v.picklist(["prefill", "decode"])),
  /** A prefill worker's KV transfer endpoint, host:port (NixlConnector's remote_host and remote_port). */
  kv_transfer_endpoint: v.optional(v.string()),
});
export type WorkerRecord = v.InferOutput<typeof WorkerRecordSchema>;

export const AttachmentIntentSchema = v.object({
  cache_owner_id: cacheOwnerId,
  worker_id: v.pipe(v.string(), v.nonEmpty()),
  dp_rank: count,
  block_size: v.pipe(count, v.minValue(1)),
  ingress_protocol: v.literal(INGRESS_PROTOCOL),
  raw_endpoint: endpoint,
  raw_topic: v.pipe(v.string(), v.regex(/^kvcr-[0-9a-f]{16}$/, "expected kvcr- and 16 lowercase hex digits")),
  replay_endpoint: v.optional(endpoint),
  router_hint_source: v.optional(endpoint),
  kv_state_endpoint: v.pipe(v.string(), v.nonEmpty()),
  incarnation: count,
  /** Where the publisher answers a full state dump (protocol/kv-events/state-dump.ts); absent for vLLM. */
  state_dump_url: v.optional(v.pipe(v.string(), v.url())),
});
export type AttachmentIntent = v.InferOutput<typeof AttachmentIntentSchema>;

/**
 * The state agent's host record, key `keys.agent(ns, agent_id)`: how a frontend
 * finds the agent's router-event stream and snapshot, and how `up --roles mockers` knows one runs.
 */
export const AgentHostRecordSchema = v.object({
  agent_id: v.pipe(v.string(), v.nonEmpty()),
  /** Base URL of the agent's HTTP API (`/live`, `/health`, `/v1/snapshot`, `/v1/slots`). */
  http_url: v.pipe(v.string(), v.url()),
  /** The normalized router-event PUB (router-events.ts), cursor from 1. */
  router_events_endpoint: endpoint,
  max_slots: v.pipe(count, v.minValue(1)),
});
export type AgentHostRecord = v.InferOutput<typeof AgentHostRecordSchema>;

/**
 * One record per active agent slot, key `keys.attachment(ns, cache_owner_id)`: maps a CacheOwner's
 * residency (router events with a `cacheOwnerId` holder) to the worker and rank that own it.
 */
export const AttachmentRecordSchema = v.object({
  cache_owner_id: cacheOwnerId,
  worker_id: v.pipe(v.string(), v.nonEmpty()),
  dp_rank: count,
  agent_id: v.pipe(v.string(), v.nonEmpty()),
  /** The agent's outbound cursor when the slot attached (its `cleared` barrier's cursor). */
  outbound_cursor: count,
  incarnation: count,
});
export type AttachmentRecord = v.InferOutput<typeof AttachmentRecordSchema>;

export type RecordCheck<T> = { ok: true; value: T } | { ok: false; problem: string };

/** Validates a record, naming the first bad field (`raw_endpoint: expected tcp://HOST:PORT`). */
export function checkRecord<T>(schema: v.GenericSchema<unknown, T>, value: unknown): RecordCheck<T> {
  const r = v.safeParse(schema, value);
  if (r.success) return { ok: true, value: r.output };
  const issue = r.issues[0];
  const path = issue.path?.map((p) => String(p.key)).join(".") || "(record)";
  return { ok: false, problem: `${path}: ${issue.message}` };
}

