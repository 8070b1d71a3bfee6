import { describe, expect, test } from "bun:test";
import { ProtocolError } from "../lib/errors.ts";
import { pack } from "./msgpack.ts";
import { decodeReplicaBatch, encodedSizeBound, ReplicaBatchEncoder, replicaSyncSubject, type ReplicaBatch, type ReplicaEvent } from "./replica-sync.ts";

const batch: ReplicaBatch = {
  routerId: "r1",
  seq: 7,
  sentAtMs: 1_700_000_000_123.5,
  live: [3, 9],
  events: [
    { kind: "add", requestId: 9, workerId: "w0", dpRank: 1, hashes: new BigUint64Array([1n, 0xffff_ffff_ffff_ffffn]), prefillTokens: 12 },
    { kind: "prefill_completed", requestId: 9, workerId: "w0", dpRank: 1 },
    { kind: "free", requestId: 3, workerId: "w1", dpRank: 0 },
  ],
};

describe("replica sync batches", () => {
  test("round-trip every event kind, the live list and a batch without one", () => {
    const enc = new ReplicaBatchEncoder();
    const back = decodeReplicaBatch(enc.encode(batch));
    expect({ ...back, events: back.events.map((e) => ("hashes" in e ? { ...e, hashes: Array.from(e.hashes) } : e)) }).toEqual({
      ...batch,
      events: batch.events.map((e) => ("hashes" in e ? { ...e, hashes: Array.from(e.hashes) } : e)),
    });
    expect(decodeReplicaBatch(enc.encode({ ...batch, live: null, events: [] }))).toEqual({ ...batch, live: null, events: [] });
  });

  test("encodedSizeBound is at least what an event adds to an encoded batch", () => {
    const enc = new ReplicaBatchEncoder();
    const empty = { routerId: "r", seq: 1, sentAtMs: 0, live: null, events: [] };
    const base = enc.encode(empty).length;
    const events: ReplicaEvent[] = [
      { kind: "free", requestId: 2 ** 40, workerId: "w", dpRank: 0 },
      { kind: "prefill_completed", requestId: 1, workerId: "", dpRank: 7 },
      { kind: "add", requestId: 2 ** 52, workerId: "worker-é", dpRank: 3, hashes: [2n ** 64n - 1n, 1n, 2n ** 63n], prefillTokens: 2 ** 31 },
    ];
    for (const e of events) expect(enc.encode({ ...empty, events: [e] }).length - base).toBeLessThanOrEqual(encodedSizeBound(e));
  });

  test("refuses what is not a batch, naming the problem", () => {
    const bad: [unknown, RegExp][] = [
      [[2, "r", 1, 0, null, []], /unsupported version 2/],
      [[1, "", 1, 0, null, []], /router_id: empty/],
      [[1, "r", 0, 0, null, []], /batch_seq/],
      [[1, "r", 1, 0, null, [["evict", 1, "w", 0]]], /unknown "evict"/],
      [[1, "r", 1, 0, null, [["free", 1, "w"]]], /free event: expected 4 elements, got 3/],
      [[1, "r", 1, 0, null, [["add", 1, "w", 0, [], 1, 2]]], /add event: expected 6 elements/],
      [[1, "r", 1, 0, null], /expected \[version, router_id/],
    ];
    for (const [value, why] of bad) {
      let err: unknown;
      try {
        decodeReplicaBatch(pack(value));
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(ProtocolError);
      expect((err as Error).message).toMatch(why);
    }
  });

  test("one subject per namespace, escaped so none collide and none has an empty token", () => {
    expect(replicaSyncSubject("dynamo")).toBe("kvcr.dynamo.router.active_sequences_events");
    const names = ["a.b", "a_b", "a_db", "a..b", "a."];
    const subjects = names.map(replicaSyncSubject);
    expect(new Set(subjects).size).toBe(names.length);
    for (const s of subjects) expect(s.split(".").every((t) => t.length > 0)).toBe(true);
  });
});
