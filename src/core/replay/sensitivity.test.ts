import { describe, expect, test } from "bun:test";
import { hasher } from "../../../test/engine-kit.ts";
import { sampleParametric } from "../../../test/timing-profile-kit.ts";
import type { WorkloadRequest } from "../workload/workload.ts";
import { COST_TERMS, Sensitivity } from "./sensitivity.ts";
import { simulate } from "./simulator.ts";

const request = (timestampMs: number, first: number, inputLength: number, outputLength: number): WorkloadRequest => ({
  timestampMs,
  inputLength,
  outputLength,
  writeTokens: (out) => out.set(Array.from({ length: inputLength }, (_, k) => first + k)),
});

function run(workload: WorkloadRequest[], requestMs = 5) {
  const sens = new Sensitivity(workload.length, 1);
  const sim = simulate(workload, { engine: { blockSize: 16, timingModel: "profile", timingProfile: sampleParametric(requestMs) }, numWorkers: 1, routerMode: "round-robin", arrival: { kind: "trace", speedupRatio: 1 }, seed: 0, sensitivity: sens }, { hasher });
  return { sens, sim };
}

describe("how request times move with a parametric profile's costs", () => {
  test("one request alone: its TTFT is its wait and its prefill pass; each gap one decode pass", () => {
    const { sens, sim } = run([request(0, 1, 10, 3)]);
    const ttft = new Float64Array(COST_TERMS);
    sens.ttft(0, ttft);
    // [step, prefill pass, decode pass, new tokens, attended pairs, decodes, decode context, per request]
    expect(Array.from(ttft)).toEqual([1, 1, 0, 10, 55, 0, 0, 1]);
    const itl = new Float64Array(COST_TERMS);
    sens.meanItl(0, 2, itl);
    // Two decode passes attending 11 and 12 tokens.
    expect(Array.from(itl)).toEqual([1, 0, 1, 0, 0, 1, 11.5, 0]);
    // The gradients are exact here: the costs times them give the replayed times.
    const m = sampleParametric(5).parametric;
    const costs = [m.stepMs, m.prefillStepMs, m.decodeStepMs, m.prefillTokenMs, m.prefillAttentionMs, m.decodeRequestMs, m.decodeContextMs, m.requestMs];
    const dot = (g: Float64Array) => g.reduce((s, v, k) => s + v * costs[k]!, 0);
    expect(dot(ttft)).toBeCloseTo(sim.firstTokenMs[0]! - sim.arrivalMs[0]!, 9);
    expect(dot(itl)).toBeCloseTo((sim.lastTokenMs[0]! - sim.firstTokenMs[0]!) / 2, 9);
  });

  test("a request that arrives during another's step counts the rest of that step in proportion, not the steps before it", () => {
    // No per-request cost: the first request's prefill pass (2 + 1 + 0.01 × 400 + 1e-5 × 80,200 ≈ 7.8 ms) is under way at 2 ms.
    const { sens, sim } = run([request(0, 1, 400, 1), request(2, 1000, 10, 1)], 0);
    const g = new Float64Array(COST_TERMS);
    sens.ttft(1, g);
    const firstPass = sim.firstTokenMs[0]!;
    const left = (firstPass - 2) / firstPass;
    // The rest of request 0's prefill pass, then its own; a later ready time would move it by as much.
    expect(g[3]).toBeCloseTo(left * 400 + 10, 6);
    expect(g[0]).toBeCloseTo(left + 1, 9);
    expect(g[7]).toBeCloseTo(1, 9);
  });
});
