// Dynamo's V2 state-agent records, as Dynamo 1.6.1 writes them (captured:
// test/fixtures/dynamo-1.6.1/state-agent.json): the agent's host advertisement
// (`kv-state-hosts-v2`), and the attachment intent a worker writes per (worker, rank) for the agent
// to attach its raw vLLM stream (`kv-state-attachment-intents-v2`, as Dynamo's
// KvStateAttachmentOwner writes it). Both are component-scoped event sources under the agent's
// component. In them a CacheOwner id is a structure, not its text form. Pure.
import { parseCacheOwner } from "../cache-owner.ts";
import { encodeSegment, hexId } from "./discovery-records.ts";

export const AGENT_COMPONENT = "kv_state_agent";
export const HOSTS_TOPIC = "kv-state-hosts-v2";
export const INTENTS_TOPIC = "kv-state-attachment-intents-v2";
/** The agent's record of an intent it attached, under the worker's endpoint. */
export const ATTACHMENTS_TOPIC = "kv-state-attachments-v2";
/** How the agent reads a worker's raw stream: vLLM's KV events. */
export const INGRESS_PROTOCOL = "vllm_residency_v1";
/** The card's `runtime_config.kv_event_source_mode` of a worker whose events come through the agent. */
export const STATE_AGENT_SOURCE_MODE = "state_agent_v2";

/** A number written from its digits (a u64 past 2^53 stays exact). */
const rawNumber = (digits: string) => (JSON as unknown as { rawJSON(text: string): unknown }).rawJSON(digits);

/** JSON whose integers past 2^53 are kept as their digits, so a record read and written back is exact. */
export function parseLosslessJson(text: string): unknown {
  return JSON.parse(text, ((_key: string, value: unknown, ctx?: { source?: string }) =>
    typeof value === "number" && !Number.isSafeInteger(value) && ctx?.source !== undefined && /^\d+$/.test(ctx.source) ? rawNumber(ctx.source) : value) as (k: string, v: unknown) => unknown);
}

export const componentScopeKey = (namespace: string, component: string, topic: string, id: number) =>
  `namespace/${encodeSegment(namespace)}/component/${encodeSegment(component)}/topic/${encodeSegment(topic)}/${hexId(id)}`;

/** The prefix every record of `topic` under the agent's component has in `namespace`. */
export const agentTopicPrefix = (namespace: string, topic: string) => `namespace/${encodeSegment(namespace)}/component/${AGENT_COMPONENT}/topic/${encodeSegment(topic)}/`;

export interface HostAdvertisement {
  /** The host's control endpoint instance, echoed verbatim in each intent as `target_host`. */
  hostInstance: unknown;
  maxSlots: number;
}

/** A `kv-state-hosts-v2` record's value (parsed losslessly); a problem names what is missing. */
export function parseHostAdvertisement(value: unknown): { ok: true; value: HostAdvertisement } | { ok: false; problem: string } {
  const v = value as { topic?: unknown; metadata?: { protocol_version?: unknown; host_instance?: unknown; max_slots?: unknown } } | null;
  if (v?.topic !== HOSTS_TOPIC) return { ok: false, problem: `not a ${HOSTS_TOPIC} record` };
  const m = v.metadata;
  if (m?.protocol_version !== "v2") return { ok: false, problem: `host advertisement of protocol ${JSON.stringify(m?.protocol_version)}, expected "v2"` };
  if (typeof m.host_instance !== "object" || m.host_instance === null) return { ok: false, problem: "host advertisement without host_instance" };
  if (!(typeof m.max_slots === "number" && Number.isInteger(m.max_slots) && m.max_slots >= 0)) return { ok: false, problem: "host advertisement without a max_slots count" };
  return { ok: true, value: { hostInstance: m.host_instance, maxSlots: m.max_slots } };
}

const digest = (hex: string) => ({ digest: Array.from(Buffer.from(hex, "hex")), source: "explicit" });

/** A CacheOwner id's structure in discovery (`{pool: {indexer_domain, dc_id}, slot}`); undefined when the text is no CacheOwner id. */
export function cacheOwnerStructure(id: string): Record<string, unknown> | undefined {
  const p = parseCacheOwner(id);
  if (p === undefined) return undefined;
  return {
    pool: { indexer_domain: indexerDomainStructure(p.semantics, p.scope), dc_id: rawNumber(BigInt(`0x${p.datacenter}`).toString()) },
    slot: digest(p.ordinal.toString(16).padStart(32, "0")),
  };
}

const indexerDomainStructure = (semantics: string, scope: string) => ({ cache_semantics: digest(semantics), routing_scope: digest(scope) });

export interface AttachmentIntent {
  namespace: string;
  /** The host's advertised control endpoint instance (echoed). */
  targetHost: unknown;
  /** The worker's endpoint instance record, as the producer. */
  producer: { namespace: string; component: string; endpoint: string; instanceId: number; transport: string };
  /** This intent's incarnation: also its publisher id and key. */
  incarnation: number;
  cacheOwnerId: string;
  workerId: number;
  dpRank: number;
  kvStateEndpoint: { namespace: string; component: string; name: string };
  kvBlockSize: number;
  rawEndpoint: string;
  rawTopic: string;
}

export function attachmentIntentRecord(i: AttachmentIntent): Record<string, unknown> {
  const owner = parseCacheOwner(i.cacheOwnerId);
  if (owner === undefined) throw new Error(`not a CacheOwner id: ${i.cacheOwnerId}`);
  return {
    type: "EventSource",
    scope: { kind: "component", namespace: i.namespace, component: AGENT_COMPONENT },
    topic: INTENTS_TOPIC,
    publisher_id: i.incarnation,
    metadata: {
      target_host: i.targetHost,
      producer_instance: { component: i.producer.component, endpoint: i.producer.endpoint, namespace: i.producer.namespace, instance_id: i.producer.instanceId, transport: { tcp: i.producer.transport } },
      intent_incarnation: i.incarnation,
      cache_owner_id: cacheOwnerStructure(i.cacheOwnerId),
      worker: { worker_id: i.workerId, dp_rank: i.dpRank },
      kv_state_endpoint: i.kvStateEndpoint,
      indexer_domain_id: indexerDomainStructure(owner.semantics, owner.scope),
      kv_block_size: i.kvBlockSize,
      ingress_protocol: INGRESS_PROTOCOL,
      raw_zmq_endpoint: i.rawEndpoint,
      raw_topic: i.rawTopic,
    },
  };
}

/** The prefix of the agent's attachment records under a worker endpoint. */
export const attachmentsPrefix = (ep: { namespace: string; component: string; name: string }) =>
  `namespace/${encodeSegment(ep.namespace)}/component/${encodeSegment(ep.component)}/endpoint/${encodeSegment(ep.name)}/topic/${encodeSegment(ATTACHMENTS_TOPIC)}/`;

export const intentKey = (namespace: string, incarnation: number) => componentScopeKey(namespace, AGENT_COMPONENT, INTENTS_TOPIC, incarnation);
