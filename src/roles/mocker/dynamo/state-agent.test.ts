// KVCR mode under Dynamo, against records Dynamo 1.6.1 wrote (test/fixtures/dynamo-1.6.1/
// state-agent.json: Dynamo's own KvStateAttachmentOwner's intent and its agent's host record): our
// intent for the same values is the captured one, the host record is read losslessly, and the
// attach logic (one host, a previous incarnation's intents, the host's attachments) on a store of
// records played by the test.
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { FIXTURES_DIR, waitFor } from "../../../../test/harness.ts";
import { DYNAMO_BUCKETS } from "../../../protocol/dynamo/discovery-records.ts";
import { attachmentIntentRecord, attachmentsPrefix, cacheOwnerStructure, parseHostAdvertisement, parseLosslessJson } from "../../../protocol/dynamo/state-agent-records.ts";
import type { DynamoRecords } from "./file-records.ts";
import { attachToDynamoAgent, watchAttachments, type IntentInput } from "./state-agent.ts";

const fixture = readFileSync(join(FIXTURES_DIR, "dynamo-1.6.1", "state-agent.json"), "utf8");
const captured = (parseLosslessJson(fixture) as { cache_owner_id: string; records: { event_sources: { file: string; value: { topic: string; metadata: Record<string, unknown> } }[] } });
const source = (topic: string) => captured.records.event_sources.find((r) => r.value.topic === topic)!;
const logs: string[] = [];
const logger = { debug: () => {}, info: (m: string) => void logs.push(m), warn: (m: string) => void logs.push(`WARN ${m}`), error: () => {} } as never;

/** A store of records in memory, keyed `bucket/key`. */
function memoryRecords(initial: Record<string, unknown> = {}): DynamoRecords & { map: Map<string, string> } {
  const map = new Map(Object.entries(initial).map(([k, v]) => [k, JSON.stringify(v)]));
  return {
    map,
    keys: [],
    put: async (bucket, key, value) => void map.set(`${bucket}/${key}`, JSON.stringify(value)),
    list: async (bucket, prefix) => [...map].filter(([k]) => k.startsWith(`${bucket}/${prefix}`)).map(([k, text]) => ({ key: k.slice(bucket.length + 1), text })),
    remove: async (bucket, key) => void map.delete(`${bucket}/${key}`),
    [Symbol.asyncDispose]: async () => {},
  };
}

const hostRecord = source("kv-state-hosts-v2").value;
const hostKey = `${DYNAMO_BUCKETS.eventSources}/namespace/dynamo/component/kv_state_agent/topic/kv-state-hosts-v2/1`;

describe("Dynamo's state agent, KVCR mode", () => {
  test("our intent for the captured values is the one Dynamo's KvStateAttachmentOwner wrote, integers past 2^53 exact", () => {
    const theirs = source("kv-state-attachment-intents-v2").value;
    const m = theirs.metadata as Record<string, { instance_id?: unknown; transport?: { tcp: string } } & Record<string, unknown>>;
    const producer = m.producer_instance!;
    const ours = attachmentIntentRecord({
      namespace: "dynamo",
      targetHost: m.target_host,
      producer: { namespace: "dynamo", component: "backend", endpoint: "generate", instanceId: producer.instance_id as number, transport: producer.transport!.tcp },
      incarnation: m.intent_incarnation as unknown as number,
      cacheOwnerId: captured.cache_owner_id,
      workerId: (m.worker as unknown as { worker_id: number }).worker_id,
      dpRank: 0,
      kvStateEndpoint: { namespace: "dynamo", component: "backend", name: "generate" },
      kvBlockSize: 16,
      rawEndpoint: m.raw_zmq_endpoint as unknown as string,
      rawTopic: "",
    });
    expect(JSON.stringify(ours)).toBe(JSON.stringify(theirs));
    expect(JSON.stringify(ours)).toContain('"instance_id":14823254223381285998');
    expect(cacheOwnerStructure("not an owner")).toBeUndefined();
  });

  test("the host record: one host in the namespace is found; none in time and two are errors naming the fix", async () => {
    expect(parseHostAdvertisement(hostRecord)).toMatchObject({ ok: true, value: { maxSlots: 2 } });
    expect(parseHostAdvertisement({ ...hostRecord, metadata: { ...hostRecord.metadata, protocol_version: "v1" } })).toEqual({ ok: false, problem: 'host advertisement of protocol "v1", expected "v2"' });
    expect(parseHostAdvertisement({ ...hostRecord, topic: "kv-state-sources-v2" })).toEqual({ ok: false, problem: "not a kv-state-hosts-v2 record" });
    expect(parseHostAdvertisement({ ...hostRecord, metadata: { ...hostRecord.metadata, host_instance: null } })).toEqual({ ok: false, problem: "host advertisement without host_instance" });
    expect(parseHostAdvertisement({ ...hostRecord, metadata: { ...hostRecord.metadata, max_slots: 0 } })).toMatchObject({ ok: true, value: { maxSlots: 0 } });
    expect(parseHostAdvertisement({ ...hostRecord, metadata: { ...hostRecord.metadata, max_slots: -1 } })).toEqual({ ok: false, problem: "host advertisement without a max_slots count" });
    // A slot ordinal is its 32 hex digits as 16 bytes (ordinal 31 is 0x1f).
    const owner31 = captured.cache_owner_id.replace(/1$/, "0").replace(/00$/, "1f");
    expect((cacheOwnerStructure(owner31) as { slot: { digest: number[] } }).slot.digest).toEqual([...Array(15).fill(0), 0x1f]);
    const intent: IntentInput = {
      producer: { namespace: "dynamo", component: "backend", endpoint: "generate", instanceId: 7, transport: "127.0.0.1:1/7/dynamo/backend/generate" },
      cacheOwnerId: captured.cache_owner_id, workerId: 7, dpRank: 0, kvStateEndpoint: { namespace: "dynamo", component: "backend", name: "generate" }, kvBlockSize: 16, rawEndpoint: "tcp://127.0.0.1:2", rawTopic: "t",
    };
    await expect(attachToDynamoAgent(memoryRecords(), "dynamo", [intent], logger, 300)).rejects.toThrow("no Dynamo state agent advertised in namespace dynamo within 0.3 s (kv-state-hosts-v2): start `python -m dynamo.kv_state_agent --max-slots N`");
    const two = memoryRecords({ [hostKey]: hostRecord, [`${hostKey}2`]: hostRecord });
    await expect(attachToDynamoAgent(two, "dynamo", [intent], logger, 300)).rejects.toThrow("namespace dynamo advertises 2 V2 state-agent hosts");
    // Another namespace's host is not ours.
    await expect(attachToDynamoAgent(memoryRecords({ [hostKey.replace("namespace/dynamo/", "namespace/other/")]: hostRecord }), "dynamo", [intent], logger, 300)).rejects.toThrow("no Dynamo state agent");
  });

  test("a previous incarnation's intent for our CacheOwner is removed, another owner's kept; each intent echoes the host and is watched until attached", async () => {
    const previous = source("kv-state-attachment-intents-v2");
    const otherOwner = JSON.parse(JSON.stringify(previous.value).replace('"slot":{"digest":[0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,1]', '"slot":{"digest":[0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,9]'));
    const prevKey = `${DYNAMO_BUCKETS.eventSources}/namespace/dynamo/component/kv_state_agent/topic/kv-state-attachment-intents-v2/old`;
    const store = memoryRecords({ [hostKey]: hostRecord, [prevKey]: previous.value, [`${prevKey}-other`]: otherOwner });
    const intent: IntentInput = {
      producer: { namespace: "dynamo", component: "backend", endpoint: "generate", instanceId: 7, transport: "127.0.0.1:1/7/dynamo/backend/generate" },
      cacheOwnerId: captured.cache_owner_id, workerId: 7, dpRank: 0, kvStateEndpoint: { namespace: "dynamo", component: "backend", name: "generate" }, kvBlockSize: 16, rawEndpoint: "tcp://127.0.0.1:2", rawTopic: "t",
    };
    logs.length = 0;
    const a = await attachToDynamoAgent(store, "dynamo", [intent, { ...intent, dpRank: 1, cacheOwnerId: captured.cache_owner_id.replace(/1$/, "2") }, { ...intent, dpRank: 2, cacheOwnerId: captured.cache_owner_id.replace(/1$/, "3") }], logger);
    expect(store.map.has(prevKey)).toBe(false);
    expect(store.map.has(`${prevKey}-other`)).toBe(true);
    expect(logs.some((l) => l.startsWith("WARN state agent: 3 CacheOwner(s) for a host of 2 slot(s)"))).toBe(true);
    const written = a.keys.map((k) => parseLosslessJson(store.map.get(`${DYNAMO_BUCKETS.eventSources}/${k}`)!) as { metadata: { target_host: unknown } });
    expect(written.map((w) => JSON.stringify(w.metadata.target_host))).toEqual(Array(3).fill(JSON.stringify(hostRecord.metadata.host_instance)));
    // The host attaches two of the three: the third is reported with the capacity reason.
    const ep = { namespace: "dynamo", component: "backend", name: "generate" };
    for (const w of a.written.slice(0, 2)) store.map.set(`${DYNAMO_BUCKETS.eventSources}/${attachmentsPrefix(ep)}${w.incarnation}`, JSON.stringify({ metadata: { intent_incarnation: w.incarnation } }));
    const state = { attached: 0 };
    const stop = new AbortController();
    const watching = watchAttachments(store, ep, a, logger, state, stop.signal, 200);
    await waitFor(() => logs.some((l) => l.includes("not attached by Dynamo's host")), { what: "the unattached intent to be reported", timeoutMs: 5_000 });
    expect(state.attached).toBe(2);
    expect(logs.filter((l) => l.includes("not attached by Dynamo's host"))).toEqual(["WARN state agent: 1 of 3 CacheOwner(s) not attached by Dynamo's host within 0.2 s (000003): the host has 2 slot(s) (its --max-slots) for 3 CacheOwner(s): it refuses the rest at capacity"]);
    const last = a.written[2]!;
    store.map.set(`${DYNAMO_BUCKETS.eventSources}/${attachmentsPrefix(ep)}${last.incarnation}`, JSON.stringify({ metadata: { intent_incarnation: last.incarnation } }));
    await watching;
    expect(state.attached).toBe(3);
    expect(logs.at(-1)).toBe("state agent: Dynamo's host attached all 3 CacheOwner(s) (late)");
    stop.abort();
  });
});
