// Dynamo's discovery records for a worker, as Dynamo 1.6.1 writes them (captured in
// test/fixtures/dynamo-1.6.1/discovery.json; docs/DECISIONS.md, "What Dynamo 1.6.1 really writes"):
// the endpoint instance, the model deployment card, the kv-events channel and source, their keys
// per bucket and the file names of the file backend. Pure: values in, JSON text out. Ids are
// u64; ours are chosen ≤ 2^53−1 and written as JSON numbers, Dynamo's own read as bigint.

export const DYNAMO_BUCKETS = { instances: "v1/instances", mdc: "v1/mdc", eventChannels: "v1/event_channels", eventSources: "v1/event_sources" } as const;
export const KV_EVENTS_TOPIC = "kv-events";

export interface EndpointId {
  namespace: string;
  component: string;
  name: string;
}

/** `dyn://ns.component.endpoint` (the `dyn://` optional); undefined when it is not three non-empty parts. */
export function parseEndpointId(text: string): EndpointId | undefined {
  const parts = text.replace(/^dyn:\/\//, "").split(".");
  if (parts.length !== 3 || parts.some((p) => p === "")) return undefined;
  return { namespace: parts[0]!, component: parts[1]!, name: parts[2]! };
}

/** An id as Dynamo's keys write it: lowercase hex, no padding. */
export const hexId = (id: bigint | number) => BigInt(id).toString(16);

/** Every byte outside [A-Za-z0-9_-] as %XX (Dynamo's event-scope segment encoding). */
export function encodeSegment(s: string): string {
  let out = "";
  for (const byte of new TextEncoder().encode(s)) {
    const c = String.fromCharCode(byte);
    out += /[A-Za-z0-9_-]/.test(c) ? c : `%${byte.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return out;
}

/** The file backend's name for a key: every byte that is not alphanumeric as %XX. */
export function keyFileName(key: string): string {
  let out = "";
  for (const byte of new TextEncoder().encode(key)) {
    const c = String.fromCharCode(byte);
    out += /[A-Za-z0-9]/.test(c) ? c : `%${byte.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return out;
}

export const instanceKey = (ep: EndpointId, instanceId: number) => `${ep.namespace}/${ep.component}/${ep.name}/${hexId(instanceId)}`;

export function endpointScopePath(ep: EndpointId): string {
  return `namespace/${encodeSegment(ep.namespace)}/component/${encodeSegment(ep.component)}/endpoint/${encodeSegment(ep.name)}`;
}

export const eventKey = (ep: EndpointId, topic: string, publisherId: number) => `${endpointScopePath(ep)}/topic/${encodeSegment(topic)}/${hexId(publisherId)}`;

/** The path a request frame names its instance by: {instance hex}/{ns}/{component}/{endpoint}. */
export const instancePath = (ep: EndpointId, instanceId: number) => `${hexId(instanceId)}/${ep.namespace}/${ep.component}/${ep.name}`;

/** The TCP transport address Dynamo 1.6.1 advertises: host:port/ then the instance path. */
export const tcpTransport = (hostPort: string, ep: EndpointId, instanceId: number) => `${hostPort}/${instancePath(ep, instanceId)}`;

export function instanceRecord(ep: EndpointId, instanceId: number, hostPort: string): Record<string, unknown> {
  return { type: "Endpoint", component: ep.component, endpoint: ep.name, namespace: ep.namespace, instance_id: instanceId, transport: { tcp: tcpTransport(hostPort, ep, instanceId) } };
}

/** A file the card points at: its absolute path, blake3 of its bytes, its size. */
export interface CheckedFile {
  path: string;
  checksum: string;
  size: number;
}

export interface ModelCardInput {
  displayName: string;
  sourcePath: string;
  tokenizer: CheckedFile;
  config: CheckedFile;
  tokenizerConfig: CheckedFile | undefined;
  architecturalMaxContextLength: number;
  blockSize: number;
  workerType: "aggregated" | "prefill" | "decode";
  totalKvBlocks: number;
  maxNumSeqs: number;
  maxNumBatchedTokens: number;
  dataParallelSize: number;
  /** A prefill worker's bootstrap address (its decode legs are then sent at once, to meet there). */
  bootstrap?: { host: string; port: number };
  /** Where the router gets this worker's KV events when not from the worker itself (`state_agent_v2`). */
  kvEventSourceMode?: string;
}

/** What a worker type serves and needs, as Dynamo 1.6.1's mocker writes it (disagg-*.json). */
const WORKER_TYPES = {
  aggregated: { modelType: "Chat | Completions", needs: [], publishesKvEvents: true },
  // A prefill worker serves no API of its own: the frontend reaches it only through a decode worker's model.
  prefill: { modelType: "", needs: [["decode"]], publishesKvEvents: true },
  decode: { modelType: "Chat | Completions", needs: [["prefill"]], publishesKvEvents: false },
} as const;

/** Dynamo's model slug: lowercase, every character outside [a-z0-9-] an underscore, none at either end. */
export function modelSlug(name: string): string {
  return name.toLowerCase().replace(/[^a-z0-9-]/g, "_").replace(/^_+|_+$/g, "");
}

export function modelRecord(ep: EndpointId, instanceId: number, m: ModelCardInput): Record<string, unknown> {
  const type = WORKER_TYPES[m.workerType];
  return {
    type: "Model",
    namespace: ep.namespace,
    component: ep.component,
    endpoint: ep.name,
    instance_id: instanceId,
    card_json: {
      display_name: m.displayName,
      slug: modelSlug(m.displayName),
      source_path: m.sourcePath,
      model_info: { hf_config_json: m.config },
      tokenizer: { hf_tokenizer_json: m.tokenizer },
      ...(m.tokenizerConfig ? { prompt_formatter: { hf_tokenizer_config_json: m.tokenizerConfig } } : {}),
      architectural_max_context_length: m.architecturalMaxContextLength,
      context_length: 0,
      kv_cache_block_size: m.blockSize,
      migration_limit: 0,
      model_type: type.modelType,
      model_input: "Tokens",
      worker_type: m.workerType,
      needs: type.needs,
      runtime_config: {
        context_length: 0,
        total_kv_blocks: m.totalKvBlocks,
        max_num_seqs: m.maxNumSeqs,
        max_num_batched_tokens: m.maxNumBatchedTokens,
        tool_call_parser: null,
        reasoning_parser: null,
        data_parallel_start_rank: 0,
        data_parallel_size: m.dataParallelSize,
        // No worker_kv_query endpoint here: the router must not expect to recover from us.
        enable_local_indexer: false,
        kv_event_publishing_enabled: type.publishesKvEvents,
        ...(m.kvEventSourceMode ? { kv_event_source_mode: m.kvEventSourceMode } : {}),
        runtime_data: {},
        ...(m.bootstrap ? { disaggregated_endpoint: { bootstrap_host: m.bootstrap.host, bootstrap_port: m.bootstrap.port } } : {}),
      },
      media_decoder: null,
      media_fetcher: null,
    },
  };
}

/**
 * A LoRA adapter's card beside its base model's, as Dynamo's own worker registers one (captured:
 * lora.json): keyed by the instance and the adapter name (`model_suffix`), named by the adapter,
 * `lora: {name}`. Requests for it carry `routing.lora_name`.
 */
export function loraModelRecord(ep: EndpointId, instanceId: number, base: ModelCardInput, lora: { name: string; id: number }): Record<string, unknown> {
  const record = modelRecord(ep, instanceId, { ...base, displayName: lora.name }) as { card_json: Record<string, unknown> };
  const { media_decoder, media_fetcher, ...card } = record.card_json;
  return { ...record, model_suffix: lora.name, card_json: { ...card, lora: { name: lora.name }, user_data: { lora_adapter: true, lora_id: lora.id }, media_decoder, media_fetcher } };
}

export const loraModelKey = (ep: EndpointId, instanceId: number, loraName: string) => `${instanceKey(ep, instanceId)}/${loraName}`;

const endpointScope = (ep: EndpointId) => ({ kind: "endpoint", endpoint: { namespace: ep.namespace, component: ep.component, name: ep.name } });

export function eventChannelRecord(ep: EndpointId, topic: string, publisherId: number, zmqEndpoint: string): Record<string, unknown> {
  return { type: "EventChannel", scope: endpointScope(ep), topic, instance_id: publisherId, transport: { kind: "Zmq", config: { endpoint: zmqEndpoint } } };
}

/** The kv-events source of one (worker, rank): without a recovery target (live only). */
export function kvEventSourceRecord(ep: EndpointId, publisherId: number, workerId: number, dpRank: number): Record<string, unknown> {
  return {
    type: "EventSource",
    scope: endpointScope(ep),
    topic: KV_EVENTS_TOPIC,
    publisher_id: publisherId,
    metadata: { kv_state_endpoint: { namespace: ep.namespace, component: ep.component, name: ep.name }, worker: { worker_id: workerId, dp_rank: dpRank }, publisher_id: publisherId },
  };
}
