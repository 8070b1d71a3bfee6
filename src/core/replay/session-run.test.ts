import { describe, expect, test } from "bun:test";
import { createBlockHasher } from "../../lib/xxh3.ts";
import { agenticWorkload, type AgenticOptions } from "../workload/sessions/agentic.ts";
import { parseTrace } from "../workload/sessions/parse-trace.ts";
import type { WorkloadRequest } from "../workload/workload.ts";
import { simulate, type SimulationOptions, type SimulationResult } from "./simulator.ts";

const hasher = createBlockHasher();
const engine = { blockSize: 16, timingModel: "fixed" as const, prefillMs: 20, decodeMs: 5 };
const base: SimulationOptions = { engine, numWorkers: 2, routerMode: "kv", arrival: { kind: "trace", speedupRatio: 1 }, seed: 0 };
const trace = (...rows: object[]) => parseTrace(rows.map((r) => JSON.stringify(r)).join("\n"), { format: "auto", traceBlockSize: 16, defaultOutputTokens: 8 }).requests;
const turn = (session: string, extra: object) => ({ session_id: session, input_length: 64, output_length: 4, hash_ids: [1, 2, 3, 4], ...extra });

/** Every turn after the first was sent exactly `delay` after its predecessor's last token, never earlier. */
function expectClosedLoop(workload: readonly WorkloadRequest[], sim: SimulationResult): void {
  for (let i = 0; i < workload.length; i++) {
    const link = workload[i]!.session!;
    if (link.previous < 0 || sim.errors.has(i)) continue;
    const due = sim.lastTokenMs[link.previous]! + link.delayMs;
    expect(sim.arrivalMs[i]!).toBeGreaterThanOrEqual(due);
    expect(sim.arrivalMs[i]!).toBe(due);
  }
}

describe("closed-loop sessions on the virtual clock", () => {
  test("12 turns 10 s apart take at least 110 s of simulated time, each turn sent 10 s after the previous finished", () => {
    const w = trace(turn("a", { timestamp: 0 }), ...Array.from({ length: 11 }, () => turn("a", { delay: 10_000 })));
    const sim = simulate(w, base, { hasher });
    expect(sim.errors.size).toBe(0);
    expectClosedLoop(w, sim);
    expect(sim.simulatedMs).toBeGreaterThan(110_000);
    // Each turn starts after the one before it ended: no two turns of a session overlap.
    for (let i = 1; i < w.length; i++) expect(sim.arrivalMs[i]!).toBeGreaterThan(sim.lastTokenMs[i - 1]!);
  });

  test("sessions interleave: a session's turns run between another's, each on its own clock", () => {
    const w = trace(turn("a", { timestamp: 0 }), turn("b", { timestamp: 100 }), turn("a", { delay: 1000 }), turn("b", { delay: 50 }), turn("a", { delay: 1000 }), turn("b", { delay: 50 }));
    const sim = simulate(w, base, { hasher });
    expectClosedLoop(w, sim);
    const a = [0, 2, 4].map((i) => sim.arrivalMs[i]!);
    const b = [1, 3, 5].map((i) => sim.arrivalMs[i]!);
    // All of b ran between a's first and second turns.
    expect(b[2]!).toBeLessThan(a[1]!);
    expect(b[0]!).toBeGreaterThan(a[0]!);
  });

  test("--max-sessions 1: the next session's first turn waits for the open session's last turn", () => {
    const w = trace(turn("a", { timestamp: 0 }), turn("b", { timestamp: 10 }), turn("a", { delay: 500 }), turn("c", { timestamp: 20 }));
    const sim = simulate(w, { ...base, maxSessions: 1 }, { hasher });
    expectClosedLoop(w, sim);
    expect(sim.arrivalMs[1]!).toBe(sim.lastTokenMs[2]!);
    expect(sim.arrivalMs[3]!).toBe(sim.lastTokenMs[1]!);
    // Without the cap, b starts at its timestamp.
    expect(simulate(w, base, { hasher }).arrivalMs[1]).toBe(10);
  });

  test("--concurrency N on sessions: N sessions open at once, first turns at 0", () => {
    const w = trace(turn("a", { timestamp: 0 }), turn("b", { timestamp: 5000 }), turn("c", { timestamp: 9000 }), turn("a", { delay: 100 }));
    const sim = simulate(w, { ...base, arrival: { kind: "concurrency", concurrency: 2 } }, { hasher });
    expectClosedLoop(w, sim);
    expect([sim.arrivalMs[0], sim.arrivalMs[1]]).toEqual([0, 0]);
    expect(sim.arrivalMs[2]!).toBe(Math.min(sim.lastTokenMs[1]!, sim.lastTokenMs[3]!));
  });

  test("a failed turn cancels the turns that wait on it, reported as not sent; the other sessions run", () => {
    // 2 × 8 blocks of 16 tokens: turn 2 of session a (200 tokens) cannot fit.
    const w = trace(turn("a", { timestamp: 0 }), turn("a", { delay: 1, input_length: 200, hash_ids: Array.from({ length: 13 }, (_, k) => k) }), turn("a", { delay: 1 }), turn("b", { timestamp: 0 }), turn("b", { delay: 1 }));
    const sim = simulate(w, { ...base, engine: { ...engine, numGpuBlocks: 8 } }, { hasher });
    expect(sim.errors.get(1)).toContain("KV blocks");
    expect(sim.errors.get(2)).toBe("not sent: turn 2 of its session (request 1) failed");
    expect([0, 3, 4].map((i) => sim.errors.has(i))).toEqual([false, false, false]);
    expect(sim.arrivalMs[2]).toBe(0); // never arrived
  });
});

describe("the synthetic agentic workload on the virtual clock", () => {
  const agentic: AgenticOptions = { sessions: 6, turns: 5, toolTokens: 40, thinkTimeMs: 300, numPrefixes: 2, prefixTokens: 128, suffixTokens: 32, outputTokens: 24, seed: 3 };

  test("each turn's prompt is the previous prompt + the tokens it generated + the tool output", () => {
    const w = agenticWorkload(agentic);
    const sim = simulate(w, { ...base, arrival: { kind: "rate", requestsPerSecond: 5 } }, { hasher });
    expect(sim.errors.size).toBe(0);
    expectClosedLoop(w, sim);
    for (let i = 0; i < w.length; i++) {
      const link = w[i]!.session!;
      if (link.previous < 0) expect(sim.promptTokens[i]).toBe(160);
      else expect(sim.promptTokens[i]).toBe(sim.promptTokens[link.previous]! + sim.outputTokens[link.previous]! + 40);
    }
  });

  test("under kv routing a later turn finds its predecessor's prompt and output cached, up to the last full block (where it stays on its worker, as most turns do)", () => {
    const w = agenticWorkload(agentic);
    const sim = simulate(w, { ...base, numWorkers: 4, arrival: { kind: "rate", requestsPerSecond: 5 } }, { hasher });
    let later = 0, stayed = 0;
    for (let i = 0; i < w.length; i++) {
      const link = w[i]!.session!;
      if (link.previous < 0) continue;
      later++;
      // The router weighs load too: a turn may move; one that stays finds its history.
      if (sim.worker[i] !== sim.worker[link.previous]) continue;
      stayed++;
      const carried = sim.promptTokens[link.previous]! + sim.outputTokens[link.previous]!;
      // The generated tokens are cached too: only the partial last block of prompt + output is recomputed.
      expect(sim.cachedTokens[i]!).toBeGreaterThanOrEqual(Math.floor(carried / 16) * 16 - 16);
    }
    expect(stayed).toBeGreaterThanOrEqual(0.75 * later);
  });

  test("seeded: the same options give the same prompts and think times", () => {
    const a = agenticWorkload(agentic);
    const b = agenticWorkload(agentic);
    const out = (r: WorkloadRequest) => {
      const t = new Uint32Array(r.inputLength);
      r.writeTokens(t);
      return [...t, r.session!.delayMs];
    };
    expect(a.map(out)).toEqual(b.map(out));
    expect(agenticWorkload({ ...agentic, seed: 4 }).map(out)).not.toEqual(a.map(out));
  });
});
