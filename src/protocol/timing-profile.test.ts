import { describe, expect, test } from "bun:test";
import { sampleParametric, sampleProfile } from "../../test/timing-profile-kit.ts";
import { gpuBlocksFor, profileProblems } from "./timing-profile.ts";

describe("profile schema", () => {
  test("the sample is valid; its geometry sizes G1 as vLLM does", () => {
    expect(profileProblems(sampleProfile())).toEqual([]);
    // (10 MB × 0.9 − 1 MB) / (1000 B × 16 tokens) = 500 blocks
    expect(gpuBlocksFor(sampleProfile().kv!, 0.9, 16)).toBe(500);
    expect(gpuBlocksFor(sampleProfile().kv!, 0.1, 16)).toBeUndefined();
  });

  test("a missing field, a falling time, a negative one and a broken axis are each named with the value", () => {
    const p = sampleProfile() as unknown as Record<string, any>;
    delete p.provenance.model;
    p.prefill.ms[2][1] = 1;
    p.decode.ms[0][0] = -3;
    p.decode.context = [100, 100, 4000];
    p.kv.kvBytesPerToken = 0;
    expect(profileProblems(p)).toEqual([
      "provenance.model: got nothing, expected a non-empty string",
      "kv.kvBytesPerToken: got 0, expected an integer ≥ 1",
      "prefill.ms[2][1]: got 1, below prefill.ms[1][1] 12: times must not fall as prefill.tokens grows",
      "decode.context[1]: got 100 after 100, expected increasing values",
    ]);
    expect(profileProblems({ ...sampleProfile(), decode: { x: "batch", batch: [1], context: [1], ms: [[-3]] } })).toEqual(["decode.ms[0][0]: got -3, expected a time in ms ≥ 0"]);
    expect(profileProblems([])).toEqual(["profile: got [], expected a JSON object"]);
  });
});

describe("parametric profiles", () => {
  test("the sample is valid; a cost that is missing, negative or not a number is named, as is a bad form", () => {
    expect(profileProblems(sampleParametric())).toEqual([]);
    const p = sampleParametric() as unknown as Record<string, any>;
    delete p.parametric.decodeStepMs;
    p.parametric.requestMs = -1;
    p.parametric.prefillTokenMs = "0.01";
    p.observed.decodeBatch = NaN;
    expect(profileProblems(p)).toEqual([
      "parametric.decodeStepMs: got nothing, expected a time in ms ≥ 0",
      'parametric.prefillTokenMs: got "0.01", expected a time in ms ≥ 0',
      "parametric.requestMs: got -1, expected a time in ms ≥ 0",
      "observed.decodeBatch: got null, expected a number ≥ 0",
    ]);
    expect(profileProblems({ ...sampleParametric(), form: "table" })).toContain('form: got "table", expected "tables" or "parametric"');
    expect(profileProblems({ ...sampleParametric(), parametric: undefined })[0]).toStartWith("parametric: got nothing, expected an object of stepMs, prefillStepMs");
  });
});
