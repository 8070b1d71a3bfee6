// A timing profile with round numbers, for tests of the profile model.
import { PROFILE_SCHEMA, type ParametricProfile, type TablesProfile } from "../src/protocol/timing-profile.ts";

/** A profile with round numbers: prefill 10 + tokens/100 + context/1000, decode 5 + batch + context/1000. */
export function sampleProfile(): TablesProfile {
  const tokens = [1, 100, 1000];
  const pctx = [0, 1000, 4000];
  const batch = [1, 4, 16];
  const dctx = [100, 1000, 4000];
  return {
    schema: PROFILE_SCHEMA,
    name: "sample",
    provenance: { source: "a test", system: "none", framework: "vllm", frameworkVersion: "0", model: "none", tensorParallelSize: 1, licence: "none" },
    interpolation: "bilinear",
    kv: { kvBytesPerToken: 1000, gpuMemoryBytes: 10_000_000, nonKvBytes: 1_000_000 },
    prefill: { tokens, context: pctx, ms: tokens.map((t) => pctx.map((c) => 10 + t / 100 + c / 1000)) },
    decode: { x: "batch", batch, context: dctx, ms: batch.map((b) => dctx.map((c) => 5 + b + c / 1000)) },
  };
}

/** A parametric profile with round costs (ms): 2 per step, 1 more per prefill pass, 3 more per decode pass, 0.01 per new token, 1e-5 per attended pair, 0.5 per decode, 0.001 per context token, `requestMs` per request. */
export function sampleParametric(requestMs = 0): ParametricProfile {
  return {
    schema: PROFILE_SCHEMA,
    name: "sample-parametric",
    provenance: { source: "a test", system: "none", framework: "vllm", frameworkVersion: "0", model: "none", licence: "none" },
    form: "parametric",
    parametric: { stepMs: 2, prefillStepMs: 1, decodeStepMs: 3, prefillTokenMs: 0.01, prefillAttentionMs: 1e-5, decodeRequestMs: 0.5, decodeContextMs: 0.001, requestMs },
    observed: { prefillTokens: 1000, prefillContext: 0, decodeBatch: 8, decodeContext: 1000 },
  };
}
