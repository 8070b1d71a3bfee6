// The source intent schema's endpoint pattern and sameAttachment, the test of whether a changed
// intent makes a slot re-attach.
import { describe, expect, test } from "bun:test";
import { checkSourceIntent, sameAttachment, type SourceIntent } from "./sources.ts";

const owner = `${"ab".repeat(16)}:${"cd".repeat(16)}/${"0".repeat(16)}/${"0".repeat(31)}1`;
const base = { cache_owner_id: owner, worker_id: "w", dp_rank: 0, block_size: 4, ingress_protocol: "vllm_residency_v1", raw_endpoint: "tcp://127.0.0.1:9", raw_topic: "" };
const ok = (fields: Record<string, unknown>) => checkSourceIntent({ ...base, ...fields }).ok;

describe("source intent endpoints", () => {
  test("tcp://HOST:PORT with a 1- to 5-digit port, a bracketed IPv6 host with any hex digits", () => {
    expect(ok({ replay_endpoint: "tcp://h:1" })).toBe(true);
    expect(ok({ replay_endpoint: "tcp://h:65535" })).toBe(true);
    expect(ok({ replay_endpoint: "tcp://[fd00::10]:5557" })).toBe(true);
    expect(ok({ replay_endpoint: "tcp://[::0]:5557" })).toBe(true);
  });

  test("a 6-digit port, no port or another scheme is rejected", () => {
    expect(ok({ replay_endpoint: "tcp://h:123456" })).toBe(false);
    expect(ok({ replay_endpoint: "tcp://h" })).toBe(false);
    expect(ok({ replay_endpoint: "ipc://h:1" })).toBe(false);
  });
});

describe("sameAttachment", () => {
  const a: SourceIntent = { ...base, incarnation: 1, replay_endpoint: "tcp://h:2", state_dump_url: "http://h:3/dump" } as SourceIntent;

  test("an intent is the same attachment as itself and as a copy", () => {
    expect(sameAttachment(a, a)).toBe(true);
    expect(sameAttachment(a, { ...a })).toBe(true);
  });

  test.each<[string, unknown]>([
    ["worker_id", "w2"],
    ["dp_rank", 1],
    ["block_size", 8],
    ["raw_endpoint", "tcp://127.0.0.1:10"],
    ["raw_topic", "kv"],
    ["replay_endpoint", "tcp://h:4"],
    ["state_dump_url", "http://h:3/other"],
    ["incarnation", 2],
  ])("a changed %s is another attachment", (field, value) => {
    expect(sameAttachment(a, { ...a, [field]: value })).toBe(false);
    expect(sameAttachment({ ...a, [field]: value }, a)).toBe(false);
  });
});
