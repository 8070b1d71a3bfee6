// A timing profile with round numbers, for tests of the profile model.
import { PROFILE_SCHEMA, type TablesProfile } from "../src/protocol/timing-profile.ts";

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
