// decodeFlat is the agent's fast path; decode.ts stays the definition of validity: on every input
// decodeFlat either declines (false) or yields exactly what decodeBatch + flatFromBatch yield.
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import vectors from "../../../test/fixtures/vectors.json";
import { vllmKvEventBatch } from "../../../test/arbitraries/kv-events.ts";
import { decodeFlat, FlatBatch, flatFromBatch } from "./flat-decode.ts";
import { decodeBatch, encodeBatch } from "./index.ts";

function view(f: FlatBatch) {
  const events = [];
  for (let i = 0; i < f.count; i++) {
    const hs = f.hashStart[i]!;
    const words = Array.from(f.words.subarray(2 * hs, 2 * (hs + f.hashCount[i]!)));
    const pk = f.parent[i]!;
    events.push({
      kind: f.kind[i], medium: f.medium[i], ownership: f.ownership[i], blockSize: f.blockSize[i], words,
      parent: pk < 0 ? null : [f.words[2 * pk], f.words[2 * pk + 1]],
      tokens: Array.from(f.tokens.subarray(f.tokenStart[i]!, f.tokenStart[i]! + f.tokenCount[i]!)),
    });
  }
  return { ts: f.ts, rank: f.dataParallelRank, events };
}

/** What the fallback path gives, or "rejected". */
function reference(bytes: Uint8Array) {
  try {
    const f = new FlatBatch();
    flatFromBatch(decodeBatch(bytes), f);
    return view(f);
  } catch {
    return "rejected";
  }
}

let accepted = 0;
function agrees(bytes: Uint8Array): void {
  const f = new FlatBatch();
  if (!decodeFlat(bytes, f)) return;
  accepted++;
  expect(view(f)).toEqual(reference(bytes) as never);
}

describe("decodeFlat", () => {
  test("takes the golden vLLM batches and agrees with decodeBatch", () => {
    for (const w of vectors.wire_batches) {
      const bytes = Uint8Array.from(Buffer.from(w.hex, "hex"));
      const f = new FlatBatch();
      expect(decodeFlat(bytes, f)).toBe(true);
      expect(view(f)).toEqual(reference(bytes) as never);
    }
  });

  test("random batches (every optional field, hash forms via extremes): declines or agrees", () => {
    accepted = 0;
    fc.assert(fc.property(vllmKvEventBatch({ maxInt: 2 ** 31 - 1 }), (batch) => agrees(encodeBatch(batch))), { numRuns: 300 });
    expect(accepted).toBeGreaterThan(250); // the fast path is the one taken, not the fallback
  });

  test("mutated and truncated bytes: never accepts what decodeBatch rejects", () => {
    const golden = vectors.wire_batches.map((w) => Uint8Array.from(Buffer.from(w.hex, "hex")));
    fc.assert(
      fc.property(fc.constantFrom(...golden), fc.nat(), fc.integer({ min: 0, max: 255 }), fc.nat(), (bytes, at, byte, cut) => {
        const m = Uint8Array.from(bytes);
        m[at % m.length] = byte;
        agrees(m);
        agrees(m.subarray(0, cut % (m.length + 1)));
      }),
      { numRuns: 2000 },
    );
  });
});
