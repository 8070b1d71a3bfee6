// LoRA adapters in a bench run, as `vllm bench serve --lora-modules a b …` uses them: each request
// names one adapter as its model, chosen at random (seeded, so both sides of a comparison send the
// same choice per request) or in turn (--lora-assignment round-robin); a trace row's own lora_name
// wins. The result is split by adapter.
import { createRng } from "../../core/random/rng.ts";
import type { WorkloadRequest } from "../../core/workload/workload.ts";
import { summarize } from "../../core/replay/stats.ts";
import type { TimedRecord } from "./drive-load.ts";

export interface LoraAssignment {
  names: readonly string[];
  assignment: "random" | "round-robin";
  /** Zipf exponent of random picks: name k (from 1) drawn with weight 1/k^S; absent = uniform. */
  zipf?: number;
}

/** The workload with an adapter per request (rows that name one keep theirs). */
export function assignAdapters(workload: readonly WorkloadRequest[], lora: LoraAssignment | undefined, seed: number): readonly WorkloadRequest[] {
  if (lora === undefined || lora.names.length === 0) return workload;
  const rng = createRng(seed);
  const pick = lora.zipf === undefined ? () => rng.int(lora.names.length) : zipfPicker(lora.names.length, lora.zipf, () => rng.next());
  return workload.map((r, i) => {
    if (r.loraName !== undefined) return r;
    const name = lora.assignment === "round-robin" ? lora.names[i % lora.names.length]! : lora.names[pick()]!;
    return { timestampMs: r.timestampMs, inputLength: r.inputLength, outputLength: r.outputLength, loraName: name, writeTokens: (out: Uint32Array) => r.writeTokens(out) };
  });
}

/** Indices 0..n−1 drawn with weight 1/(k+1)^s (inverse of the cumulative weights). */
export function zipfPicker(n: number, s: number, uniform: () => number): () => number {
  const cumulative = new Float64Array(n);
  let total = 0;
  for (let k = 0; k < n; k++) cumulative[k] = total += 1 / (k + 1) ** s;
  return () => {
    const u = uniform() * total;
    let k = 0;
    while (k < n - 1 && cumulative[k]! <= u) k++;
    return k;
  };
}

export interface BenchAdapterFigures {
  lora_name: string | null;
  completed: number;
  failed: number;
  mean_ttft_ms: number;
  p99_ttft_ms: number;
  /** Cached over prompt tokens of the completed requests that reported cached tokens (null when none did). */
  prefix_cache_reuse_ratio: number | null;
}

/** Per adapter (null = the base model), base first; undefined when no request named one. */
export function splitRecordsByAdapter(records: readonly TimedRecord[], workload: readonly WorkloadRequest[]): BenchAdapterFigures[] | undefined {
  const groups = new Map<string | null, TimedRecord[]>();
  for (const r of records) {
    const name = workload[r.index]?.loraName ?? null;
    let g = groups.get(name);
    if (g === undefined) groups.set(name, (g = []));
    g.push(r);
  }
  if (groups.size === 0 || (groups.size === 1 && groups.has(null))) return undefined;
  const names = [...groups.keys()].sort((a, b) => (a === null ? -1 : b === null ? 1 : a < b ? -1 : a > b ? 1 : 0));
  return names.map((name) => {
    const g = groups.get(name)!;
    const ok = g.filter((r) => r.ok);
    const ttft = summarize(Float64Array.from(ok.map((r) => r.ttftMs).filter((t) => t === t)));
    const reported = ok.filter((r) => r.cachedTokens !== undefined);
    const prompt = reported.reduce((s, r) => s + r.promptTokens, 0);
    const cached = reported.reduce((s, r) => s + r.cachedTokens!, 0);
    return { lora_name: name, completed: ok.length, failed: g.length - ok.length, mean_ttft_ms: ttft.mean, p99_ttft_ms: ttft.p99, prefix_cache_reuse_ratio: prompt > 0 ? cached / prompt : null };
  });
}
