import { describe, expect, test } from "bun:test";
import { engine, hasher, runToIdle, seq, stepOnce } from "../../../test/engine-kit.ts";
import { MockEngine } from "./mock-engine.ts";
import { sampleParametric, sampleProfile } from "../../../test/timing-profile-kit.ts";
import { engineConfigProblems, DEFAULT_ENGINE_CONFIG } from "./engine-config.ts";

// sampleProfile: prefill 10 + tokens/100 + context/1000 ms, decode 5 + batch + context/1000 ms.
const profiled = { timingModel: "profile", timingProfile: sampleProfile(), blockSize: 16, numGpuBlocks: 64 } as const;

describe("engine steps timed by a profile", () => {
  test("a prefill step pays the prefill table only (its first token is part of the pass); each decode step the decode table at its context", () => {
    const e = engine(profiled);
    expect(e.addRequest({ id: "a", tokenIds: seq(0, 100), maxTokens: 3 }).ok).toBe(true);
    const run = runToIdle(e);
    expect(run.steps.map((s) => s.durationMs)).toEqual([
      expect.closeTo(10 + 1, 9), // 100 new tokens after none
      expect.closeTo(5 + 1 + 0.101, 9), // one request attending 101 tokens
      expect.closeTo(5 + 1 + 0.102, 9),
    ]);
  });

  test("a cached prefix is context, not new tokens: the second prompt prefills its tail after 96 cached tokens", () => {
    const e = engine(profiled);
    e.addRequest({ id: "a", tokenIds: seq(0, 100), maxTokens: 1 });
    runToIdle(e);
    e.addRequest({ id: "b", tokenIds: [...seq(0, 96), ...seq(500, 8)], maxTokens: 1 });
    const run = runToIdle(e);
    expect(run.steps[0]!.durationMs).toBeCloseTo(10 + 8 / 100 + 96 / 1000, 9);
  });

  test("a mixed step adds prefill at its tokens' mean context and decode for the decoding requests", () => {
    const e = engine(profiled);
    e.addRequest({ id: "a", tokenIds: seq(0, 200), maxTokens: 4 });
    e.step(0);
    e.addRequest({ id: "b", tokenIds: seq(1000, 20), maxTokens: 2 });
    const mixed = e.step(100);
    expect(mixed.durationMs).toBeCloseTo(10 + 20 / 100 + (5 + 1 + 201 / 1000), 9);
  });

  test("a request whose context would pass the tables is refused at admission, not in a step; with extrapolation it runs, warned once", () => {
    // sampleProfile's decode.context ends at 4000, prefill.context at 4000.
    const e = engine({ ...profiled, numGpuBlocks: 1024 });
    expect(e.addRequest({ id: "long", tokenIds: seq(0, 3990), maxTokens: 20 })).toEqual({ ok: false, reason: "prompt (3990) + max tokens (20) are past timing profile sample's decode.context (last 4000); give --timing-extrapolate to extrapolate" });
    expect(e.addRequest({ id: "fits", tokenIds: seq(0, 3990), maxTokens: 11 }).ok).toBe(true);
    const warned: string[] = [];
    const x = new MockEngine({ ...profiled, numGpuBlocks: 1024, maxNumBatchedTokens: 1000, timingExtrapolate: true }, { hasher, warn: (m, key) => warned.push(`${key}|${m}`) });
    expect(x.addRequest({ id: "long", tokenIds: seq(0, 3990), maxTokens: 20 }).ok).toBe(true);
    runToIdle(x);
    expect(warned).toEqual(["sample decode.context|timing profile sample: decode.context 4001 is past the profile's last point 4000; extrapolating linearly from its last two points"]);
  });

  test("the profile model needs a valid profile, and a profile needs the profile model", () => {
    expect(engineConfigProblems({ ...DEFAULT_ENGINE_CONFIG, timingModel: "profile" })).toEqual(["timingProfile: the profile timing model needs a profile"]);
    expect(engineConfigProblems({ ...DEFAULT_ENGINE_CONFIG, timingProfile: sampleProfile() })).toEqual(["timingProfile: given, but timingModel is polynomial"]);
  });
});

describe("engine steps timed by a parametric profile", () => {
  // sampleParametric: 2 per step, +1 prefilling, +3 decoding, 0.01 per new token, 1e-5 per attended pair, 0.5 per decode, 0.001 per context token.
  const parametric = (requestMs = 0) => ({ timingModel: "profile", timingProfile: sampleParametric(requestMs), blockSize: 16, numGpuBlocks: 64 }) as const;

  test("a prefill pass pays the step, its own set-up, its tokens and every pair they attend; a decode pass its set-up, requests and context", () => {
    const e = engine(parametric());
    expect(e.addRequest({ id: "a", tokenIds: seq(0, 100), maxTokens: 2 }).ok).toBe(true);
    const run = runToIdle(e);
    // 100 new tokens after none attend 1 + 2 + … + 100 = 5050 pairs.
    expect(run.steps.map((s) => s.durationMs)).toEqual([expect.closeTo(2 + 1 + 1 + 5050e-5, 9), expect.closeTo(2 + 3 + 0.5 + 0.101, 9)]);
  });

  test("a mixed step pays the step once and both set-ups", () => {
    const e = engine(parametric());
    e.addRequest({ id: "a", tokenIds: seq(0, 40), maxTokens: 4 });
    stepOnce(e, { steps: [], events: [], tokens: new Map(), nowMs: 0 });
    e.addRequest({ id: "b", tokenIds: seq(500, 10), maxTokens: 1 });
    const r = e.step(100);
    // a decodes (41 context tokens), b prefills 10 tokens: 55 pairs.
    expect(r.durationMs).toBeCloseTo(2 + 1 + 3 + 0.1 + 55e-5 + 0.5 + 0.041, 9);
  });

  test("a request is ready its per-request cost after it arrives: nothing is scheduled before, and the engine says when to wake", () => {
    const e = engine(parametric(50));
    e.addRequest({ id: "a", tokenIds: seq(0, 20), maxTokens: 1, arrivalMs: 10 });
    const early = e.step(10);
    expect(early.scheduledRequests).toBe(0);
    expect(e.nextWakeMs()).toBe(60);
    expect(e.step(59.9).scheduledRequests).toBe(0);
    const due = e.step(60);
    expect(due.scheduledRequests).toBe(1);
    expect(due.tokens).toHaveLength(1);
    // Once it ran, nothing is left to wake for.
    expect(e.nextWakeMs()).toBeUndefined();
  });

  test("the speedup divides the per-request cost as it divides steps; the tables' profiles have none", () => {
    const fast = engine({ ...parametric(50), speedupRatio: 10 });
    fast.addRequest({ id: "a", tokenIds: seq(0, 20), maxTokens: 1, arrivalMs: 0 });
    fast.step(0);
    expect(fast.nextWakeMs()).toBe(5);
    const tables = engine(profiled);
    tables.addRequest({ id: "a", tokenIds: seq(0, 20), maxTokens: 1, arrivalMs: 0 });
    expect(tables.step(0).scheduledRequests).toBe(1);
  });
});
