// KVCR mode under Dynamo: each (worker, rank)'s raw vLLM stream is attached by Dynamo's own state
// agent (`python -m dynamo.kv_state_agent`). The mocker waits for the namespace's one V2 host
// advertisement, removes the attachment intents a previous incarnation left for its CacheOwners
// (two intents for one owner make the host fail the slot), and writes one intent per (worker, rank)
// as Dynamo's KvStateAttachmentOwner does (protocol/dynamo/state-agent-records.ts has the records).
import { KvcrError } from "../../../lib/errors.ts";
import type { Logger } from "../../../lib/logger.ts";
import { DYNAMO_BUCKETS } from "../../../protocol/dynamo/discovery-records.ts";
import {
  agentTopicPrefix, attachmentIntentRecord, attachmentsPrefix, cacheOwnerStructure, HOSTS_TOPIC, intentKey, INTENTS_TOPIC, parseHostAdvertisement, parseLosslessJson, type AttachmentIntent, type HostAdvertisement,
} from "../../../protocol/dynamo/state-agent-records.ts";
import { jsonSafeId } from "./event-publisher.ts";
import type { DynamoRecords } from "./file-records.ts";

/** How long a mocker waits for Dynamo's state agent to advertise its host. */
export const HOST_WAIT_MS = 60_000;
const POLL_MS = 250;

export type IntentInput = Omit<AttachmentIntent, "namespace" | "targetHost" | "incarnation">;

export interface AgentAttachment {
  host: HostAdvertisement;
  /** The intents written, by key. */
  keys: string[];
  /** Each intent's incarnation and CacheOwner, in the order written. */
  written: { incarnation: number; cacheOwnerId: string }[];
}

/** How long the host has to attach every intent before the ones it did not are reported. */
export const ATTACH_WAIT_MS = 10_000;

async function findHost(records: DynamoRecords, namespace: string, logger: Logger, waitMs: number): Promise<HostAdvertisement> {
  const deadline = Date.now() + waitMs;
  let told = false;
  for (;;) {
    const hosts: HostAdvertisement[] = [];
    for (const r of await records.list(DYNAMO_BUCKETS.eventSources, agentTopicPrefix(namespace, HOSTS_TOPIC))) {
      const host = parseHostAdvertisement(parseLosslessJson(r.text));
      if (host.ok) hosts.push(host.value);
      else logger.warn(`state agent: ${r.key} skipped: ${host.problem}`);
    }
    if (hosts.length === 1) return hosts[0]!;
    if (hosts.length > 1) throw new KvcrError("STATE_AGENT_HOSTS", `namespace ${namespace} advertises ${hosts.length} V2 state-agent hosts (${HOSTS_TOPIC}); a worker attaches to one: run one \`python -m dynamo.kv_state_agent\` per namespace`);
    if (Date.now() >= deadline) {
      throw new KvcrError("STATE_AGENT_ABSENT", `no Dynamo state agent advertised in namespace ${namespace} within ${waitMs / 1000} s (${HOSTS_TOPIC}): start \`python -m dynamo.kv_state_agent --max-slots N\` with the same discovery backend`);
    }
    if (!told) logger.info(`waiting for Dynamo's state agent to advertise its host in namespace ${namespace} (${HOSTS_TOPIC})`);
    told = true;
    await Bun.sleep(POLL_MS);
  }
}

export async function attachToDynamoAgent(records: DynamoRecords, namespace: string, intents: readonly IntentInput[], logger: Logger, waitMs = HOST_WAIT_MS): Promise<AgentAttachment> {
  const host = await findHost(records, namespace, logger, waitMs);
  // A previous incarnation's intents for our owners (a kill -9 leaves them until their TTL).
  const ours = new Set(intents.map((i) => JSON.stringify(cacheOwnerStructure(i.cacheOwnerId))));
  for (const r of await records.list(DYNAMO_BUCKETS.eventSources, agentTopicPrefix(namespace, INTENTS_TOPIC))) {
    const owner = (parseLosslessJson(r.text) as { metadata?: { cache_owner_id?: unknown } }).metadata?.cache_owner_id;
    if (!ours.has(JSON.stringify(owner))) continue;
    await records.remove(DYNAMO_BUCKETS.eventSources, r.key);
    logger.info(`state agent: removed an attachment intent a previous incarnation left for one of this process's CacheOwners (${r.key})`);
  }
  if (intents.length > host.maxSlots) logger.warn(`state agent: ${intents.length} CacheOwner(s) for a host of ${host.maxSlots} slot(s) (its --max-slots): the rest will be refused`);
  const keys: string[] = [];
  const written: AgentAttachment["written"] = [];
  for (const i of intents) {
    const incarnation = jsonSafeId();
    const key = intentKey(namespace, incarnation);
    await records.put(DYNAMO_BUCKETS.eventSources, key, attachmentIntentRecord({ ...i, namespace, targetHost: host.hostInstance, incarnation }));
    keys.push(key);
    written.push({ incarnation, cacheOwnerId: i.cacheOwnerId });
  }
  return { host, keys, written };
}

/** The incarnations the agent has attached: its attachment records under the worker endpoint. */
async function attachedIncarnations(records: DynamoRecords, ep: { namespace: string; component: string; name: string }): Promise<Set<string>> {
  const out = new Set<string>();
  for (const r of await records.list(DYNAMO_BUCKETS.eventSources, attachmentsPrefix(ep))) {
    const inc = (parseLosslessJson(r.text) as { metadata?: { intent_incarnation?: unknown } }).metadata?.intent_incarnation;
    if (inc !== undefined) out.add(String(inc));
  }
  return out;
}

/**
 * Watches the host attach the intents: the count attached is kept in `state.attached`; those not
 * attached within `waitMs` are reported once, with the likely reason (the host logs its own; it
 * writes nothing for an intent it refuses), and again when they do attach later. `settled` runs
 * once, when all are attached or at the report.
 */
export async function watchAttachments(
  records: DynamoRecords, ep: { namespace: string; component: string; name: string }, a: AgentAttachment, logger: Logger, state: { attached: number }, signal: AbortSignal,
  waitMs = ATTACH_WAIT_MS, settled: () => void = () => {},
): Promise<void> {
  const deadline = Date.now() + waitMs;
  let reported = false;
  while (!signal.aborted) {
    let attached: Set<string>;
    try {
      attached = await attachedIncarnations(records, ep);
    } catch (err) {
      logger.debug(`state agent: reading attachments failed: ${(err as Error).message}`);
      attached = new Set();
    }
    const missing = a.written.filter((w) => !attached.has(String(w.incarnation)));
    state.attached = a.written.length - missing.length;
    if (missing.length === 0) {
      logger.info(`state agent: Dynamo's host attached all ${a.written.length} CacheOwner(s)${reported ? " (late)" : ""}`);
      settled();
      return;
    }
    if (!reported && Date.now() >= deadline) {
      const why = a.written.length > a.host.maxSlots ? `the host has ${a.host.maxSlots} slot(s) (its --max-slots) for ${a.written.length} CacheOwner(s): it refuses the rest at capacity` : "see the state agent's log for its reason";
      logger.warn(`state agent: ${missing.length} of ${a.written.length} CacheOwner(s) not attached by Dynamo's host within ${waitMs / 1000} s (${missing.map((m) => m.cacheOwnerId.slice(-6)).join(", ")}): ${why}`);
      reported = true;
      settled();
    }
    await Bun.sleep(POLL_MS);
  }
  settled();
}
