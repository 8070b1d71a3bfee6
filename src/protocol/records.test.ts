import { describe, expect, test } from "bun:test";
import { AttachmentIntentSchema, checkRecord, INGRESS_PROTOCOL } from "./records.ts";

const owner = `${"a".repeat(32)}:${"b".repeat(32)}/${"c".repeat(16)}/${"0".repeat(31)}1`;
const intent = {
  cache_owner_id: owner,
  worker_id: "w-1",
  dp_rank: 0,
  block_size: 64,
  ingress_protocol: INGRESS_PROTOCOL as typeof INGRESS_PROTOCOL,
  raw_endpoint: "tcp://127.0.0.1:5557",
  raw_topic: "kvcr-0123456789abcdef",
  kv_state_endpoint: "dynamo/kv_state_agent/slot",
  incarnation: 1,
};

describe("attachment intents", () => {
  test("a valid intent passes", () => {
    expect(checkRecord(AttachmentIntentSchema, intent)).toEqual({ ok: true, value: intent });
  });
  test.each([
    [{ raw_endpoint: "127.0.0.1:5557" }, "raw_endpoint: expected tcp://HOST:PORT"],
    [{ raw_topic: "topic" }, "raw_topic: expected kvcr- and 16 lowercase hex digits"],
    [{ cache_owner_id: "x" }, "cache_owner_id: expected a canonical CacheOwner id"],
    [{ ingress_protocol: "other" }, "ingress_protocol:"],
    [{ dp_rank: -1 }, "dp_rank:"],
  ])("names the bad field %p", (patch, problem) => {
    const r = checkRecord(AttachmentIntentSchema, { ...intent, ...patch });
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.problem).toStartWith(problem);
  });
});
