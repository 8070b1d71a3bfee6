// LoRA adapters in the engine: an adapter seeds every block hash of its requests, so one prompt
// under two adapters shares no block (and none with the base model), under one adapter it hits
// its own blocks; stored events name the adapter on both tiers (G2 stores through the registry).
import { describe, expect, test } from "bun:test";
import type { KvStoredEvent } from "../kv/kv-events.ts";
import { engine, hasher, residencyMismatch, runToIdle, seq } from "../../../test/engine-kit.ts";

const BS = 4;
const prompt = seq(100, 8 * BS);
const stores = (events: readonly { kind: string }[]) => events.filter((e): e is KvStoredEvent => e.kind === "stored");

describe("LoRA adapters in the engine", () => {
  test("the same prompt under two adapters and the base model shares no block; under one adapter it hits its own", () => {
    const e = engine({ blockSize: BS, numGpuBlocks: 256 });
    const cached = (id: string, loraName?: string) => {
      expect(e.addRequest({ id, tokenIds: prompt, maxTokens: 1, ...(loraName ? { loraName } : {}) })).toEqual({ ok: true });
      const run = runToIdle(e);
      return run.steps.flatMap((s) => s.finished).find((f) => f.requestId === id)!.cachedTokens;
    };
    expect(cached("a1", "adapter-a")).toBe(0);
    expect(cached("b1", "adapter-b")).toBe(0);
    expect(cached("base1")).toBe(0);
    // Hits stop at the last full block before the prompt's end (one token is always computed).
    expect(cached("a2", "adapter-a")).toBe(7 * BS);
    expect(cached("b2", "adapter-b")).toBe(7 * BS);
    expect(cached("base2")).toBe(7 * BS);
    const resident = new Set(e.inspect().resident.device);
    expect(resident.size).toBe(3 * 8);
  });

  test("stored events carry the adapter and the hashes the router computes for it", () => {
    const e = engine({ blockSize: BS, numGpuBlocks: 256 });
    e.addRequest({ id: "r", tokenIds: prompt, maxTokens: 6, loraName: "adapter-a" });
    const run = runToIdle(e);
    const s = stores(run.events);
    expect(s.length).toBeGreaterThan(0);
    for (const ev of s) expect(ev.loraName).toBe("adapter-a");
    const want = hasher.hashBlocks(prompt, BS, undefined, hasher.seedOf("adapter-a"));
    expect(s[0]!.blockHashes.slice(0, 8)).toEqual([...want.sequence]);
    expect(s[0]!.localHashes.slice(0, 8)).toEqual([...want.local]);
    // Blocks completed by generated tokens chain on under the adapter too.
    const all = s.flatMap((ev) => ev.blockHashes);
    const tokens = [...prompt, ...run.tokens.get("r")!];
    const full = hasher.hashBlocks(tokens.slice(0, all.length * BS), BS, undefined, hasher.seedOf("adapter-a"));
    expect(all).toEqual([...full.sequence]);
    expect(residencyMismatch(e, run.events)).toBeUndefined();
  });

  test("base-model stores carry no adapter", () => {
    const e = engine({ blockSize: BS, numGpuBlocks: 256 });
    e.addRequest({ id: "r", tokenIds: prompt, maxTokens: 1 });
    for (const ev of stores(runToIdle(e).events)) expect("loraName" in ev).toBe(false);
  });

  test("host-tier stores of an adapter's blocks name the adapter", () => {
    const e = engine({ blockSize: BS, numGpuBlocks: 16, numHostBlocks: 64 });
    e.addRequest({ id: "a", tokenIds: prompt, maxTokens: 1, loraName: "adapter-a" });
    e.addRequest({ id: "base", tokenIds: seq(5000, 8 * BS), maxTokens: 1 });
    const run = runToIdle(e, 0, 10_000);
    const host = stores(run.events).filter((ev) => ev.tier === "host");
    expect(host.length).toBeGreaterThan(0);
    const adapterHashes = new Set(hasher.hashBlocks(prompt, BS, undefined, hasher.seedOf("adapter-a")).sequence);
    for (const ev of host) {
      const ofAdapter = ev.blockHashes.every((h) => adapterHashes.has(h));
      expect(ev.loraName).toBe(ofAdapter ? "adapter-a" : undefined);
    }
    expect(host.some((ev) => ev.loraName === "adapter-a")).toBe(true);
    expect(residencyMismatch(e, run.events)).toBeUndefined();
  });

  test("an empty adapter name is refused", () => {
    const e = engine({ blockSize: BS, numGpuBlocks: 64 });
    expect(e.addRequest({ id: "r", tokenIds: prompt, maxTokens: 1, loraName: "" })).toEqual({ ok: false, reason: "LoRA adapter name must be a non-empty string" });
  });
});
