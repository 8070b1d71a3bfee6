import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { createBlockHasher } from "../../lib/xxh3.ts";
import { parseMooncakeTrace } from "../workload/mooncake-trace.ts";
import { simulateDisagg, type DisaggSimulationOptions } from "./disagg-simulator.ts";
import { simulate } from "./simulator.ts";

const hasher = createBlockHasher();
const TRACE = new URL("../../../traces/mooncake_conversation_trace.jsonl", import.meta.url).pathname;
const head = parseMooncakeTrace(readFileSync(TRACE, "utf8")).requests.slice(0, 120);
const engine = { blockSize: 64, numGpuBlocks: 16_384, kvTransferBandwidthGbps: 8 };
const opts = (mode: "full_prompt" | "destination_missing"): DisaggSimulationOptions => ({
  engine: { ...engine, kvTransferTimingMode: mode },
  prefillWorkers: 2,
  decodeWorkers: 2,
  arrival: { kind: "trace", speedupRatio: 3 },
  seed: 0,
});

describe("disaggregated replay", () => {
  const full = simulateDisagg(head, opts("full_prompt"), { hasher });
  const missing = simulateDisagg(head, opts("destination_missing"), { hasher });

  test("every request runs both legs: one pull each, its blocks freed on the prefill side once it lands", () => {
    expect(full.errors.size).toBe(0);
    expect(full.disagg.kv_transfers).toBe(head.length);
    for (const e of full.engines.slice(0, 2)) expect([e.heldBlocks, e.heldRequests]).toEqual([0, 0]);
    // Prefill legs only on prefill workers, decode legs only on decode workers.
    expect(full.requestsPerWorker.slice(0, 2).reduce((a, b) => a + b, 0)).toBe(head.length);
    expect(full.requestsPerWorker.slice(2).reduce((a, b) => a + b, 0)).toBe(head.length);
    expect([...full.worker].every((w) => w >= 2)).toBe(true);
    for (let i = 0; i < head.length; i++) expect(full.outputTokens[i]).toBe(head[i]!.outputLength);
  });

  test("full_prompt times the whole prompt; destination_missing only what the decode worker lacked", () => {
    const promptTokens = head.reduce((s, r) => s + r.inputLength, 0);
    expect(full.disagg.kv_transfer_bytes).toBe(promptTokens * 131_072);
    expect(missing.disagg.kv_transfer_bytes).toBe(missing.disagg.pulled_tokens * 131_072);
    expect(missing.disagg.kv_transfer_bytes).toBeLessThan(full.disagg.kv_transfer_bytes);
    // 8 GB/s: a mean prompt of ~12k tokens is ~1.5 GB, ~200 ms.
    expect(full.disagg.mean_kv_transfer_ms).toBeCloseTo(full.disagg.kv_transfer_bytes / head.length / 8e6, 6);
  });

  test("each first token waits for its pull; decode steps never carry a prompt's prefill", () => {
    for (let i = 0; i < head.length; i++) {
      const transferMs = (head[i]!.inputLength * 131_072) / 8e6;
      expect(full.firstTokenMs[i]! - full.arrivalMs[i]!).toBeGreaterThanOrEqual(transferMs);
    }
    const agg = simulate(head, { engine, numWorkers: 4, routerMode: "kv", arrival: { kind: "trace", speedupRatio: 3 }, seed: 0 }, { hasher });
    // The decode pool computed only each prompt's last token: the rest was its own hits or pulled.
    const decode = full.engines.slice(2);
    expect(decode.reduce((s, e) => s + e.preemptions, 0)).toBe(0);
    const computed = decode.reduce((s, e) => s + e.prefixQueryTokens - e.prefixHitTokens, 0) - full.disagg.pulled_tokens;
    expect(computed).toBe(head.length);
    // So no decode step carries a long prefill: the longest gap is far below aggregated serving's.
    expect(Math.max(...full.itlMs) * 2).toBeLessThan(Math.max(...agg.itlMs));
  });

  test("the same inputs give the same run", () => {
    const again = simulateDisagg(head, opts("full_prompt"), { hasher });
    expect([...again.firstTokenMs]).toEqual([...full.firstTokenMs]);
    expect(again.disagg).toEqual(full.disagg);
  });
});

describe("disaggregated replay under LoRA adapters", () => {
  // The same prompt three times, far apart: base, then adapter, then adapter again.
  const row = (ts: number, lora?: string) => JSON.stringify({ timestamp: ts, input_length: 256, output_length: 2, hash_ids: [1, 2, 3, 4], ...(lora ? { lora_name: lora } : {}) });
  const workload = parseMooncakeTrace([row(0), row(10_000, "sql-lora"), row(20_000, "sql-lora")].join("\n")).requests;
  const one = { ...opts("full_prompt"), prefillWorkers: 1, decodeWorkers: 1, arrival: { kind: "trace" as const, speedupRatio: 1 } };

  test("an adapter's prompt reuses only the adapter's blocks, on both legs, as the aggregated replay hashes it", () => {
    const sim = simulateDisagg(workload, one, { hasher });
    expect(sim.errors.size).toBe(0);
    // The prefill leg's hits: none for the adapter's first request (the base model's blocks are not its), all but the last token's block for its second.
    expect(workload.map((r) => r.loraName)).toEqual([undefined, "sql-lora", "sql-lora"]);
    expect([...sim.cachedTokens]).toEqual([0, 0, 192]);
    const agg = simulate(workload, { engine: one.engine, numWorkers: 1, routerMode: "kv", arrival: one.arrival, seed: 0 }, { hasher });
    expect([...agg.cachedTokens]).toEqual([0, 0, 192]);
  });
});

describe("disaggregated replay in a closed loop", () => {
  // Ten distinct 256-token prompts (16 blocks of 16), one at a time: each arrives as the one before finishes.
  const row = (k: number) => JSON.stringify({ timestamp: 0, input_length: 256, output_length: 3, hash_ids: [100 + k] });
  const workload = parseMooncakeTrace(Array.from({ length: 10 }, (_, k) => row(k)).join("\n")).requests;
  // A decode rank is busy above half its 64 blocks: three requests' load left on it would shed the next.
  const run = () =>
    simulateDisagg(
      workload,
      { engine: { blockSize: 16, numGpuBlocks: 64, kvTransferBandwidthGbps: 8 }, prefillWorkers: 1, decodeWorkers: 2, router: { busy: { activeDecodeBlocks: 0.5 } }, arrival: { kind: "concurrency", concurrency: 1 }, seed: 0 },
      { hasher },
    );

  test("every request arrives once, after the one before it finished, and none is shed", () => {
    const sim = run();
    expect(sim.errors.size).toBe(0);
    expect(sim.rejected).toBe(0);
    expect(sim.numRequests).toBe(10);
    // Each request runs its prefill leg once and its decode leg once: ten arrivals, no eleventh.
    expect(sim.requestsPerWorker[0]).toBe(10);
    expect(sim.requestsPerWorker[1]! + sim.requestsPerWorker[2]!).toBe(10);
    expect(sim.disagg.kv_transfers).toBe(10);
    for (let i = 1; i < 10; i++) expect(sim.arrivalMs[i]).toBe(sim.lastTokenMs[i - 1]!);
    for (let i = 0; i < 10; i++) expect(sim.outputTokens[i]).toBe(3);
  });
});
