// LoRA adapters in a replay: per-row adapters hash with the adapter's seed (so the same prompt under
// two adapters shares nothing), each adapter's requests reach only the workers placed to hold it,
// and a trace row's lora_name is read (a bad one refused with the reason).
import { describe, expect, test } from "bun:test";
import { createBlockHasher } from "../../lib/xxh3.ts";
import { parseMooncakeTrace } from "../workload/mooncake-trace.ts";
import type { WorkloadRequest } from "../workload/workload.ts";
import { loraExclusions } from "./lora-routing.ts";
import { simulate, type SimulationOptions } from "./simulator.ts";

const hasher = createBlockHasher();
const BS = 16;
const request = (loraName: string | undefined, prefix: number, salt: number): WorkloadRequest => ({
  timestampMs: 0,
  inputLength: 8 * BS,
  outputLength: 2,
  ...(loraName !== undefined ? { loraName } : {}),
  writeTokens: (out) => {
    for (let i = 0; i < 8 * BS; i++) out[i] = i < 6 * BS ? prefix * 10_000 + i : salt * 1_000 + i;
  },
});
const opts = (over: Partial<SimulationOptions> = {}): SimulationOptions => ({ engine: { blockSize: BS, numGpuBlocks: 4096 }, numWorkers: 8, routerMode: "kv", arrival: { kind: "concurrency", concurrency: 1 }, seed: 1, ...over });

describe("LoRA adapters in replay", () => {
  test("one prompt under two adapters and the base model shares no block; under one adapter it reuses its own", () => {
    const w = [request("a", 1, 1), request("b", 1, 2), request(undefined, 1, 3), request("a", 1, 4), request("b", 1, 5), request(undefined, 1, 6)];
    const sim = simulate(w, opts({ numWorkers: 1 }), { hasher });
    expect([...sim.cachedTokens]).toEqual([0, 0, 0, 6 * BS, 6 * BS, 6 * BS]);
  });

  test("with --lora-replicas 2 every request of an adapter lands on one of its two holders, kv and round-robin alike", () => {
    const w = Array.from({ length: 60 }, (_, i) => request(["a", "b", "c"][i % 3], i % 3, i));
    const excluded = loraExclusions(w, 8, 1, 2, hasher)!;
    for (const mode of ["kv", "round-robin"] as const) {
      const sim = simulate(w, opts({ routerMode: mode, loraReplicas: 2 }), { hasher });
      for (let i = 0; i < w.length; i++) expect(excluded.get(w[i]!.loraName!)!.has(sim.worker[i]!)).toBe(false);
      const used = new Map<string, Set<number>>();
      for (let i = 0; i < w.length; i++) (used.get(w[i]!.loraName!) ?? used.set(w[i]!.loraName!, new Set()).get(w[i]!.loraName!)!).add(sim.worker[i]!);
      for (const ws of used.values()) expect(ws.size).toBeLessThanOrEqual(2);
    }
    expect(loraExclusions(w, 8, 1, undefined, hasher)).toBeUndefined();
    expect(loraExclusions(w, 8, 2, 2, hasher)!.get("a")!.size).toBe(12); // 6 workers × 2 ranks
  });

  test("a trace row's lora_name is read; a bad one is refused with the reason", () => {
    const parsed = parseMooncakeTrace(['{"timestamp": 0, "input_length": 4, "output_length": 1, "hash_ids": [1], "lora_name": "sql-lora"}', '{"timestamp": 0, "input_length": 4, "output_length": 1, "hash_ids": [1], "lora_name": null}', '{"timestamp": 0, "input_length": 4, "output_length": 1, "hash_ids": [1], "lora_name": 3}'].join("\n"), 4);
    expect(parsed.requests.map((r) => r.loraName)).toEqual(["sql-lora", undefined]);
    expect(parsed.errors).toEqual([{ line: 3, message: "lora_name must be a LoRA adapter's name (a non-empty string) or null, got 3" }]);
  });
});

describe("loraExclusions", () => {
  const h = createBlockHasher();
  const w = (loraName?: string): WorkloadRequest => ({ timestampMs: 0, inputLength: 1, outputLength: 1, writeTokens: () => {}, ...(loraName ? { loraName } : {}) });

  test("one adapter on 1 of 4 workers × 2 ranks: the other workers' six rank ids are excluded", () => {
    const ex = loraExclusions([w("a"), w()], 4, 2, 1, h)!;
    expect([...ex.keys()]).toEqual(["a"]);
    const excluded = [...ex.get("a")!].sort((x, y) => x - y);
    expect(excluded).toHaveLength(6);
    const holder = [0, 1, 2, 3].find((k) => !excluded.includes(2 * k))!;
    expect(excluded).toEqual([0, 1, 2, 3, 4, 5, 6, 7].filter((id) => Math.floor(id / 2) !== holder));
  });

  test("no exclusions without adapters, without replicas, or with a replica on every worker", () => {
    expect(loraExclusions([w()], 4, 2, 1, h)).toBeUndefined();
    expect(loraExclusions([w("a")], 4, 2, undefined, h)).toBeUndefined();
    expect(loraExclusions([w("a")], 4, 2, 4, h)).toBeUndefined();
  });
});
