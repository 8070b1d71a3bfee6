// The state dump is the engine's residency: replayed on an empty consumer it gives exactly the
// blocks resident in each tier, every parent stored before its child, token ids included.
import { describe, expect, test } from "bun:test";
import { engine, runToIdle, seq, storedEventProblem } from "../../../test/engine-kit.ts";
import { ResidencyReplayer } from "../../core/kv/residency-replayer.ts";
import { stateDumpEvents } from "./state-dump.ts";

const sorted = (hashes: Iterable<bigint>) => [...hashes].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));

describe("stateDumpEvents", () => {
  test("replaying the dump reproduces each tier's residency, parents first (evicted ancestors stored and removed again)", () => {
    const e = engine({ blockSize: 4, numGpuBlocks: 6, numHostBlocks: 6, kvBytesPerToken: 1 });
    let now = 0;
    // Shared prefixes, then enough other prompts that G1 and G2 both evict.
    for (const [i, prompt] of [seq(0, 13), seq(0, 21), seq(100, 17), seq(200, 13), seq(0, 9), seq(300, 17)].entries()) {
      e.addRequest({ id: `r${i}`, tokenIds: prompt, maxTokens: 1 });
      now = runToIdle(e, now).nowMs;
    }
    const dump = stateDumpEvents(e)!;
    expect(dump.unresolved).toBe(0);
    const replayed = new ResidencyReplayer();
    const known = new Set<bigint>();
    for (const ev of dump.events) {
      if (ev.kind === "stored") {
        if (ev.parentHash !== null) expect(known.has(ev.parentHash)).toBe(true);
        for (const h of ev.blockHashes) known.add(h);
        expect(ev.tokenIds.length).toBe(ev.blockHashes.length * 4);
      }
      replayed.apply(ev);
    }
    // Each stored block's token ids rehash, from its parent, to its sequence and local hashes.
    expect(storedEventProblem(dump.events)).toBeUndefined();
    expect(replayed.anomalies).toEqual([]);
    const resident = e.inspect().resident;
    expect(sorted(replayed.tiers.device)).toEqual(sorted(resident.device));
    expect(sorted(replayed.tiers.host)).toEqual(sorted(resident.host));
    expect(resident.host.length).toBeGreaterThan(0);
  });

  test("no host tier: no token records, so no dump", () => {
    const e = engine({ blockSize: 4, numGpuBlocks: 8, numHostBlocks: 0 });
    expect(stateDumpEvents(e)).toBeUndefined();
  });

  test("an ancestor resident in no tier is stored on the device tier and removed at the end, so its descendants chain", () => {
    // A (device) ← B (released: token record only) ← C (host).
    const records = new Map<bigint, { parentHash: bigint | null; localHash: bigint; tokenIds: Uint32Array }>([
      [1n, { parentHash: null, localHash: 11n, tokenIds: Uint32Array.of(1, 2) }],
      [2n, { parentHash: 1n, localHash: 12n, tokenIds: Uint32Array.of(3, 4) }],
      [3n, { parentHash: 2n, localHash: 13n, tokenIds: Uint32Array.of(5, 6) }],
    ]);
    const fake = { config: { blockSize: 2, numHostBlocks: 4 }, inspect: () => ({ resident: { device: [1n], host: [3n] } }), blockRecord: (h: bigint) => records.get(h) };
    const dump = stateDumpEvents(fake)!;
    expect(dump.events.map((e) => (e.kind === "cleared" ? e.kind : `${e.kind} ${e.tier} ${e.blockHashes.join(",")}`))).toEqual(["stored device 1", "stored device 2", "stored host 3", "removed device 2"]);
    const replayed = new ResidencyReplayer();
    replayed.applyAll(dump.events);
    expect([[...replayed.tiers.device], [...replayed.tiers.host]]).toEqual([[1n], [3n]]);
  });

  test("a block whose parent chain has no token record is left out and counted", () => {
    const fake = { config: { blockSize: 2, numHostBlocks: 4 }, inspect: () => ({ resident: { device: [5n], host: [] } }), blockRecord: (h: bigint) => (h === 5n ? { parentHash: 4n, localHash: 1n, tokenIds: Uint32Array.of(1, 2) } : undefined) };
    expect(stateDumpEvents(fake)).toEqual({ events: [], unresolved: 1 });
  });
});
