// Router event stream codec: pinned layout, round trip and fuzz, one test per rejection kind.
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { ProtocolError } from "../lib/errors.ts";
import { thrownBy } from "../../test/harness.ts";
import { pack } from "./msgpack.ts";
import { decodeRouterEventMessage, decodeRouterEvents, encodeRouterEvents, RouterEventKind, RouterTier } from "./router-events.ts";
import { encodeSeq } from "./seq-frame.ts";
import type { RouterEvent } from "./router-events.ts";

const hex = (b: Uint8Array) => Buffer.from(b).toString("hex");
const fromHex = (h: string) => Uint8Array.from(Buffer.from(h.replace(/\s+/g, ""), "hex"));

const stored: RouterEvent = {
  holder: { workerId: "w0", dpRank: 1 },
  tier: "device",
  kind: "stored",
  blocks: [{ seqHash: 0xcb38e4d7fb2dca5cn, localHash: 0xcb38e4d7fb2dca5cn }, { seqHash: 2n, localHash: 3n }],
  parentHash: 7n,
};
const owned: RouterEvent = { holder: { cacheOwnerId: "aa:bb/cc/dd" }, tier: "host", kind: "removed", blocks: [{ seqHash: 2n, localHash: 3n }], parentHash: null };
const cleared: RouterEvent = { holder: { workerId: "w0", dpRank: 0 }, tier: "disk", kind: "cleared", blocks: [], parentHash: null };

const rejection = (bytes: Uint8Array): ProtocolError => thrownBy(ProtocolError, () => decodeRouterEvents(bytes));
const expectRejected = (bytes: Uint8Array, message: string, offset: number) =>
  expect(rejection(bytes).message).toStartWith(`${message} at byte ${offset} (`);

describe("router events", () => {
  test("pinned layout: [1, [[holder, tier, kind, blocks, parent]]], hashes as cf", () => {
    expect(hex(encodeRouterEvents([cleared]))).toBe("9201" + "91" + "95" + "92a2773000" + "a46469736b" + "a7636c6561726564" + "90" + "c0");
    expect(hex(encodeRouterEvents([owned]))).toBe(
      "9201" + "91" + "95" + "ab61613a62622f63632f6464" + "a4686f7374" + "a772656d6f766564" +
        "91" + "92" + "cf0000000000000002" + "cf0000000000000003" + "c0",
    );
  });

  test("round trip of each kind and holder", () => {
    const events = [stored, owned, cleared];
    expect(decodeRouterEvents(encodeRouterEvents(events))).toEqual(events);
    expect(decodeRouterEvents(encodeRouterEvents([]))).toEqual([]);
  });

  test("property: decode(encode(x)) = x", () => {
    const hash = fc.bigInt({ min: 0n, max: 2n ** 64n - 1n });
    const holder = fc.oneof(
      fc.record({ workerId: fc.string({ minLength: 1, unit: "grapheme" }), dpRank: fc.nat() }),
      fc.record({ cacheOwnerId: fc.string({ minLength: 1, maxLength: 120 }) }),
    );
    const blocks = (min: number) => fc.array(fc.record({ seqHash: hash, localHash: hash }), { minLength: min, maxLength: 8 });
    const event: fc.Arbitrary<RouterEvent> = fc.oneof(
      fc.record({ holder, tier: fc.constantFrom(...Object.values(RouterTier)), kind: fc.constant(RouterEventKind.Stored), blocks: blocks(1), parentHash: fc.option(hash, { nil: null }) }),
      fc.record({ holder, tier: fc.constantFrom(...Object.values(RouterTier)), kind: fc.constant(RouterEventKind.Removed), blocks: blocks(0), parentHash: fc.constant(null) }),
      fc.record({ holder, tier: fc.constantFrom(...Object.values(RouterTier)), kind: fc.constant(RouterEventKind.Cleared), blocks: fc.constant([]), parentHash: fc.constant(null) }),
    );
    fc.assert(fc.property(fc.array(event, { maxLength: 6 }), (events) => {
      const bytes = encodeRouterEvents(events);
      expect(decodeRouterEvents(bytes)).toEqual(events);
      // Fuzz alongside: any mutation decodes or is a ProtocolError, never another exception.
      const mutated = Uint8Array.from(bytes);
      const at = events.length % mutated.length;
      mutated[at] = mutated[at]! ^ 0x5a;
      try {
        decodeRouterEvents(mutated);
      } catch (err) {
        expect(err).toBeInstanceOf(ProtocolError);
      }
      // Every proper prefix is refused (sampled: each refusal builds an error with a stack).
      for (let n = 0; n < bytes.length; n += 1 + (n >> 3)) expect(() => decodeRouterEvents(bytes.subarray(0, n))).toThrow(ProtocolError);
    }), { numRuns: 200 });
  });

  test("random bytes only ever decode or raise ProtocolError", () => {
    fc.assert(fc.property(fc.uint8Array({ maxLength: 64 }), (tail) => {
      for (const bytes of [tail, Uint8Array.from([0x92, 0x01, ...tail])]) {
        try {
          decodeRouterEvents(bytes);
        } catch (err) {
          if (!(err instanceof ProtocolError)) throw err;
        }
      }
    }), { numRuns: 2000 });
  });

  test("the encoder refuses events that break the shape rules", () => {
    expect(() => encodeRouterEvents([{ ...cleared, blocks: [{ seqHash: 1n, localHash: 1n }] }])).toThrow("a cleared event carries no blocks");
    expect(() => encodeRouterEvents([{ ...owned, parentHash: 1n }])).toThrow("a removed event has no parent_hash");
    expect(() => encodeRouterEvents([{ ...stored, blocks: [] }])).toThrow("a stored event needs at least one block");
    expect(() => encodeRouterEvents([{ ...stored, tier: "gpu" as RouterTier }])).toThrow("unknown tier gpu");
    expect(() => encodeRouterEvents([{ ...stored, holder: { workerId: "", dpRank: 0 } }])).toThrow("worker_id must not be empty");
    expect(() => encodeRouterEvents([{ ...stored, blocks: [{ seqHash: -1n, localHash: 0n }] }])).toThrow("outside u64 range");
  });
});

describe("router event decode errors", () => {
  const ev = (e: unknown[]) => pack([1, [e]]);
  // [1, [ event ]] = 92 01 91 <event at byte 3>; a one-char holder "o" puts the tier at 6, kind at 11
  test("payload not an array", () => expectRejected(pack({ v: 1 }), "router payload: expected array, got map", 0));
  test("payload of the wrong arity", () => expectRejected(pack([1]), "router payload: expected [version, events], got 1 elements", 0));
  test("unsupported version", () => expectRejected(pack([2, []]), "router payload: unsupported version 2 (this build reads 1)", 1));
  test("event of the wrong arity", () =>
    expectRejected(ev(["w", "host"]), "router event: expected [holder, tier, kind, blocks, parent_hash], got 2 elements", 3));
  test("holder of the wrong type", () =>
    expectRejected(ev([5, "host", "stored", [], null]), "holder: expected [worker_id, dp_rank] or cache_owner_id, got int", 4));
  test("worker holder of the wrong arity", () => expectRejected(ev([["w"], "host", "stored", [], null]), "holder: expected [worker_id, dp_rank]", 4));
  test("empty worker id / cache owner id", () => {
    expectRejected(ev([["", 0], "host", "stored", [], null]), "worker_id: empty", 5);
    expectRejected(ev(["", "host", "stored", [], null]), "cache_owner_id: empty", 4);
  });
  test("negative dp rank", () => expectRejected(ev([["w", -1], "host", "removed", [], null]), `dp_rank: -1 is outside [0, ${Number.MAX_SAFE_INTEGER}]`, 7));
  test("unknown tier and kind", () => {
    expectRejected(ev(["o", "gpu", "stored", [], null]), 'tier: unknown "gpu" (expected device, host, disk)', 6);
    expectRejected(ev(["o", "host", "evicted", [], null]), 'kind: unknown "evicted" (expected stored, removed, cleared)', 11);
  });
  test("block not a pair", () => expectRejected(ev(["o", "host", "removed", [[1n]], null]), "block: expected [seq_hash, local_hash]", 20));
  test("signed, negative and bytes hashes are refused (this format always writes cf)", () => {
    expectRejected(ev(["o", "host", "removed", [[-1, 2]], null]), "seq_hash: expected unsigned int, got negative int", 21);
    expectRejected(ev(["o", "host", "removed", [[1, -200]], null]), "local_hash: expected unsigned int, got signed int", 22);
    expectRejected(ev(["o", "host", "removed", [[Uint8Array.from([1, 2, 3, 4, 5, 6, 7, 8]), 1]], null]), "seq_hash: expected unsigned int, got bytes", 21);
  });
  test("shape rules", () => {
    expectRejected(ev(["o", "host", "cleared", [[1, 2]], null]), "router event: a cleared event carries no blocks", 3);
    expectRejected(ev(["o", "host", "removed", [[1, 2]], 9]), "router event: a removed event has no parent_hash", 3);
    expectRejected(ev(["o", "host", "stored", [], null]), "router event: a stored event needs at least one block", 3);
  });
  test("parent hash of the wrong type", () => expectRejected(ev(["o", "host", "stored", [[1, 2]], "p"]), "parent_hash: expected unsigned int, got string", 22));
  test("trailing bytes", () => expectRejected(fromHex("920190c0"), "1 trailing bytes after the router payload", 3));
  test("truncation", () => expectRejected(encodeRouterEvents([stored]).subarray(0, 30), "truncated seq_hash: needs 8 more bytes, 4 left", 25));
});

describe("stream message [topic, cursor, payload]", () => {
  const payload = encodeRouterEvents([{ holder: { workerId: "w", dpRank: 0 }, tier: RouterTier.Device, kind: RouterEventKind.Cleared, blocks: [], parentHash: null }]);
  test("decodes the cursor and the events", () => {
    const m = decodeRouterEventMessage([new Uint8Array(0), encodeSeq(7n), payload]);
    expect(m.cursor).toBe(7n);
    expect(m.events).toEqual(decodeRouterEvents(payload));
  });
  test("rejects another frame count and a cursor frame that is not 8 bytes", () => {
    expect(() => decodeRouterEventMessage([encodeSeq(1n), payload])).toThrow("expected 3 frames [topic, cursor, payload], got 2");
    expect(() => decodeRouterEventMessage([new Uint8Array(0), new Uint8Array(4), payload])).toThrow(ProtocolError);
  });
});
