import { describe, expect, test } from "bun:test";
import { hasher } from "../../../test/engine-kit.ts";
import { sampleParametric } from "../../../test/timing-profile-kit.ts";
import type { ParametricModel } from "../../protocol/timing-profile.ts";
import { createRng } from "../random/rng.ts";
import { simulate } from "../replay/simulator.ts";
import type { Sensitivity } from "../replay/sensitivity.ts";
import { accuracyOf } from "./accuracy.ts";
import { fitParametric, simulatedTimes } from "./fit.ts";
import { meanItlMs, observedWorkload, type ObservedRequest } from "./observed-workload.ts";

const engine = { blockSize: 16, numGpuBlocks: 20_000, maxNumSeqs: 64, maxNumBatchedTokens: 4096, timingModel: "profile" } as const;

/** Poisson arrivals of unique prompts, 1,000–4,000 tokens, 10–90 outputs; their times unknown yet. */
function requests(seed: number, n: number, rate: number): ObservedRequest[] {
  const rng = createRng(seed);
  let t = 0;
  return Array.from({ length: n }, () => {
    t += (-Math.log(1 - rng.next()) / rate) * 1000;
    return { sendMs: t, promptTokens: 1000 + Math.floor(rng.next() * 3000), outputTokens: 10 + Math.floor(rng.next() * 80), cachedTokens: NaN, ttftMs: 0, e2eMs: 0 };
  });
}

function replay(reqs: readonly ObservedRequest[], model: ParametricModel, sensitivity?: Sensitivity) {
  const { workload } = observedWorkload(reqs, 16);
  const timingProfile = { ...sampleParametric(), parametric: model };
  return simulate(workload, { engine: { ...engine, timingProfile }, numWorkers: 1, routerMode: "round-robin", arrival: { kind: "trace", speedupRatio: 1 }, seed: 0, ...(sensitivity ? { sensitivity } : {}) }, { hasher });
}

/** The requests as measured on a server whose steps cost `model` exactly. */
function measured(reqs: ObservedRequest[], model: ParametricModel): ObservedRequest[] {
  const sim = replay(reqs, model);
  return reqs.map((r, i) => ({ ...r, ttftMs: simulatedTimes(sim, i).ttftMs, e2eMs: simulatedTimes(sim, i).e2eMs }));
}

describe("fitting a parametric model to a measured run", () => {
  test("a run of a server that is a parametric model: the fit replays its held-out requests and another workload as the server's own model does", () => {
    const hidden: ParametricModel = { stepMs: 1.5, prefillStepMs: 2, decodeStepMs: 4, prefillTokenMs: 0.02, prefillAttentionMs: 4e-6, decodeRequestMs: 0.3, decodeContextMs: 2e-4, requestMs: 3 };
    const run = measured(requests(1, 400, 4), hidden);
    const train = Uint8Array.from(run, (_, i) => (i % 10 < 7 ? 1 : 0));
    const fit = fitParametric({ observed: run, train, engines: 1, replay: (m, s) => replay(run, m, s) });
    for (const v of Object.values(fit.model)) expect(v).toBeGreaterThanOrEqual(0);
    // A schedule is chaotic: costs 0.1 % off the server's already move single requests' TTFT by
    // several percent (a request joins another step), so per request the floor is a few percent.
    const held = run.map((_, i) => i).filter((i) => train[i] === 0);
    const ttft = accuracyOf(held.map((i) => run[i]!.ttftMs), held.map((i) => simulatedTimes(fit.sim, i).ttftMs));
    const itl = accuracyOf(held.map((i) => meanItlMs(run[i]!)), held.map((i) => simulatedTimes(fit.sim, i).itlMs));
    expect(ttft.mapePct).toBeLessThan(5);
    expect(itl.mapePct).toBeLessThan(2);
    expect(Math.abs(ttft.mean.errorPct)).toBeLessThan(1.5);
    expect(Math.abs(itl.mean.errorPct)).toBeLessThan(1);
    // Another workload, denser: the fitted costs and the server's own agree on its means.
    const other = requests(9, 300, 8);
    const [truth, fitted] = [replay(other, hidden), replay(other, fit.model)];
    const mean = (sim: ReturnType<typeof replay>, k: "ttftMs" | "itlMs") => other.reduce((s, _, i) => s + simulatedTimes(sim, i)[k], 0) / other.length;
    expect(mean(fitted, "ttftMs") / mean(truth, "ttftMs")).toBeCloseTo(1, 1);
    expect(mean(fitted, "itlMs") / mean(truth, "itlMs")).toBeCloseTo(1, 1);
    // The largest steps the run reached, for the profile's notes.
    expect(fit.observedRange.decodeBatch).toBeGreaterThan(1);
    expect(fit.observedRange.prefillTokens).toBeLessThanOrEqual(engine.maxNumBatchedTokens);
  });

  test("a run that is slower than the guess and one that is faster both converge", () => {
    for (const scale of [0.25, 3]) {
      const hidden: ParametricModel = { stepMs: 0, prefillStepMs: 0, decodeStepMs: 6 * scale, prefillTokenMs: 0.03 * scale, prefillAttentionMs: 0, decodeRequestMs: 0.2 * scale, decodeContextMs: 0, requestMs: 0 };
      const run = measured(requests(2, 200, 2 / scale), hidden);
      const fit = fitParametric({ observed: run, train: new Uint8Array(run.length).fill(1), engines: 1, replay: (m, s) => replay(run, m, s) });
      expect(fit.trainingError, `× ${scale}`).toBeLessThan(5e-3);
    }
  });
});
