// Fuzzing decodeBatch: random, truncated and mutated inputs must yield a batch or a ProtocolError,
// never another exception. Bounded counts keep this under a second or two.
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import vectors from "../../../test/fixtures/vectors.json";
import { ProtocolError } from "../../lib/errors.ts";
import { vllmKvEventBatch } from "../../../test/arbitraries/kv-events.ts";
import { decodeBatch, encodeBatch } from "./index.ts";

const golden = vectors.wire_batches.map((w) => Uint8Array.from(Buffer.from(w.hex, "hex")));

/** "ok" or "rejected"; any other exception fails the test with the input in hex. */
function outcome(bytes: Uint8Array): "ok" | "rejected" {
  try {
    decodeBatch(bytes);
    return "ok";
  } catch (err) {
    if (err instanceof ProtocolError && Number.isInteger(err.offset) && err.offset >= 0 && err.offset <= bytes.length) {
      return "rejected";
    }
    throw new Error(`decodeBatch threw ${String(err)} for ${Buffer.from(bytes).toString("hex")}`);
  }
}

const mutation = fc.oneof(
  fc.record({ kind: fc.constant("set" as const), at: fc.nat(), byte: fc.integer({ min: 0, max: 255 }) }),
  fc.record({ kind: fc.constant("insert" as const), at: fc.nat(), byte: fc.integer({ min: 0, max: 255 }) }),
  fc.record({ kind: fc.constant("delete" as const), at: fc.nat(), byte: fc.constant(0) }),
);

function mutate(bytes: Uint8Array, edits: { kind: "set" | "insert" | "delete"; at: number; byte: number }[]): Uint8Array {
  const out = [...bytes];
  for (const e of edits) {
    if (out.length === 0) break;
    const at = e.at % out.length;
    if (e.kind === "set") out[at] = e.byte;
    else if (e.kind === "insert") out.splice(at, 0, e.byte);
    else out.splice(at, 1);
  }
  return Uint8Array.from(out);
}

describe("decodeBatch fuzzing", () => {
  test("every proper prefix of a valid payload is rejected (the outer header declares its size)", () => {
    const samples = [...golden, ...fc.sample(vllmKvEventBatch(), { numRuns: 30, seed: 7 }).map((b) => encodeBatch(b))];
    for (const bytes of samples) {
      expect(outcome(bytes)).toBe("ok");
      for (let n = 0; n < bytes.length; n++) expect(outcome(bytes.subarray(0, n))).toBe("rejected");
    }
  });

  test("random byte strings", () => {
    fc.assert(fc.property(fc.uint8Array({ maxLength: 96 }), (bytes) => void outcome(bytes)), { numRuns: 2000 });
    // Start with a plausible batch header so the decoder gets past the first byte more often.
    const header = fc.constantFrom([0x93, 0xcb, 0x41, 0xd9, 0x54, 0xfc, 0x40, 0x20, 0, 0], [0x92, 0x01], [0x83, 0xa2, 0x74, 0x73, 0x01]);
    fc.assert(
      fc.property(header, fc.uint8Array({ maxLength: 96 }), (h, tail) => void outcome(Uint8Array.from([...h, ...tail]))),
      { numRuns: 2000 },
    );
  });

  test("byte-mutated golden payloads", () => {
    const seen = { ok: 0, rejected: 0 };
    fc.assert(
      fc.property(fc.constantFrom(...golden), fc.array(mutation, { minLength: 1, maxLength: 4 }), (bytes, edits) => {
        seen[outcome(mutate(bytes, edits))]++;
      }),
      { numRuns: 3000 },
    );
    // Both outcomes occur: mutations in values decode, structural ones are refused.
    expect(seen.ok).toBeGreaterThan(0);
    expect(seen.rejected).toBeGreaterThan(0);
  });

  test("byte-mutated random payloads", () => {
    fc.assert(
      fc.property(vllmKvEventBatch(), fc.array(mutation, { minLength: 1, maxLength: 6 }), (batch, edits) => {
        void outcome(mutate(encodeBatch(batch), edits));
      }),
      { numRuns: 1500 },
    );
  });
});
