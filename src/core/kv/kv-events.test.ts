// The engine's KV event buffer and the residency replayer that reads its log, against literals.
import { describe, expect, test } from "bun:test";
import { KvEventBuffer } from "./kv-events.ts";
import { ResidencyReplayer } from "./residency-replayer.ts";

describe("KvEventBuffer", () => {
  test("adjacent host removals merge into one event; device ones and interrupted runs do not", () => {
    const b = new KvEventBuffer();
    expect(b.emitted).toBe(0);
    b.removed("host", 1n);
    b.removed("host", 2n);
    b.removed("device", 3n);
    b.removed("device", 4n);
    b.removed("host", 5n);
    expect(b.events).toEqual([
      { kind: "removed", tier: "host", blockHashes: [1n, 2n] },
      { kind: "removed", tier: "device", blockHashes: [3n] },
      { kind: "removed", tier: "device", blockHashes: [4n] },
      { kind: "removed", tier: "host", blockHashes: [5n] },
    ]);
    expect(b.emitted).toBe(4);
  });
});

describe("ResidencyReplayer", () => {
  const stored = (tier: "device" | "host", hashes: bigint[], tokens: number) =>
    ({ kind: "stored", tier, parentHash: null, blockHashes: hashes, localHashes: hashes, tokenIds: new Uint32Array(tokens), blockSize: 2 }) as const;

  test("applies stores, removals and clears per tier; each misfit is an anomaly naming it", () => {
    const r = new ResidencyReplayer();
    r.apply(stored("device", [1n, 2n], 4));
    r.apply(stored("host", [7n], 2));
    r.apply({ kind: "removed", tier: "device", blockHashes: [1n, 9n] });
    expect([[...r.tiers.device], [...r.tiers.host]]).toEqual([[2n], [7n]]);
    r.apply(stored("device", [2n], 3));
    r.apply({ kind: "cleared", tier: "host" });
    expect([[...r.tiers.device], [...r.tiers.host]]).toEqual([[2n], []]);
    expect(r.anomalies).toEqual(["removed device: 9 not resident", "stored device: 3 token ids for 1 blocks", "stored device: 2 already resident"]);
  });
});
