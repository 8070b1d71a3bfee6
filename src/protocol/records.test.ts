import { describe, expect, test } from "bun:test";
import { AttachmentIntentSchema, checkRecord, EVENT_MODES, INGRESS_PROTOCOL, WorkerRecordSchema } from "./records.ts";

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
  test("endpoints: a bracketed IPv6 host with any hex digit, ports of 1 to 5 digits", () => {
    const ok = (raw_endpoint: string) => checkRecord(AttachmentIntentSchema, { ...intent, raw_endpoint }).ok;
    expect([ok("tcp://[fd00::10]:5557"), ok("tcp://[::0]:1"), ok("tcp://h:65535")]).toEqual([true, true, true]);
    expect([ok("tcp://h:123456"), ok("tcp://h:"), ok("tcp://[fd00::1]")]).toEqual([false, false, false]);
  });

  test("a CacheOwner id with zero digits in every part passes; block_size from 1", () => {
    const zeros = `${"0".repeat(32)}:${"0".repeat(32)}/${"0".repeat(16)}/${"0".repeat(32)}`;
    expect(checkRecord(AttachmentIntentSchema, { ...intent, cache_owner_id: zeros }).ok).toBe(true);
    expect(checkRecord(AttachmentIntentSchema, { ...intent, block_size: 1 }).ok).toBe(true);
    expect(checkRecord(AttachmentIntentSchema, { ...intent, block_size: 0 }).ok).toBe(false);
  });

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

describe("worker records", () => {
  const record = {
    worker_id: "w-1", worker_index: 0, model: "m", worker_type: "mocker", request_url: "http://127.0.0.1:8000", data_parallel_size: 1, block_size: 16,
    total_gpu_blocks: 100, total_host_blocks: 0, kv_event_source_mode: EVENT_MODES.direct, raw_endpoints: ["tcp://127.0.0.1:5557"], raw_topic: "", capabilities: [], topology: {},
  };
  const ok = (patch: object) => checkRecord(WorkerRecordSchema, { ...record, ...patch }).ok;

  test("block_size and max_num_batched_tokens start at 1", () => {
    expect(ok({})).toBe(true);
    expect([ok({ block_size: 1 }), ok({ block_size: 0 })]).toEqual([true, false]);
    expect([ok({ max_num_batched_tokens: 1 }), ok({ max_num_batched_tokens: 0 })]).toEqual([true, false]);
  });
});
