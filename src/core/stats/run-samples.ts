// What a verdict compares: per side (a router mode, a result file, a concurrency point) its rounds
// (fresh stacks), each round its completed requests; and the figures computed from any pick of
// those requests with multiplicity (a bootstrap resample, or all of them), named as the result
// JSON names them so the verdict's figures are the table's figures.
import { percentile } from "../replay/stats.ts";

/** One completed request. */
export interface RequestSample {
  ttftMs: number;
  e2elMs: number;
  outputTokens: number;
  /** Sum and number of its inter-token gaps (ms). */
  itlSumMs: number;
  itlCount: number;
  promptTokens: number;
  /** Cached prompt tokens; NaN when the server did not say. */
  cachedTokens: number;
}

export interface RoundSamples {
  requests: readonly RequestSample[];
  /** Seconds from the round's first request to its last token (the throughput's denominator). */
  durationS: number;
}

export interface SideSamples {
  label: string;
  rounds: readonly RoundSamples[];
}

/** The compared figures, in the order verdicts list them. */
export const VERDICT_METRICS = [
  { key: "mean_ttft_ms", label: "mean TTFT" },
  { key: "p90_ttft_ms", label: "p90 TTFT" },
  { key: "mean_itl_ms", label: "mean ITL" },
  { key: "mean_tpot_ms", label: "mean TPOT" },
  { key: "mean_e2el_ms", label: "mean E2E latency" },
  // A run-level figure: resampling a round's requests cannot vary it, only rounds can.
  { key: "output_throughput", label: "output throughput", runLevel: true },
  { key: "prefix_cache_reuse_ratio", label: "prefix reuse" },
] as const satisfies readonly { key: string; label: string; runLevel?: boolean }[];

export type VerdictMetric = (typeof VERDICT_METRICS)[number]["key"];
export const METRIC_COUNT = VERDICT_METRICS.length;

/** A round in columns, for resampling without allocating per request. */
export interface RoundColumns {
  n: number;
  ttftMs: Float64Array;
  e2elMs: Float64Array;
  outputTokens: Float64Array;
  itlSumMs: Float64Array;
  itlCount: Float64Array;
  promptTokens: Float64Array;
  cachedTokens: Float64Array;
  durationS: number;
}

export function columnsOf(round: RoundSamples): RoundColumns {
  const rs = round.requests;
  const col = (f: (r: RequestSample) => number) => Float64Array.from(rs, f);
  return {
    n: rs.length,
    ttftMs: col((r) => r.ttftMs),
    e2elMs: col((r) => r.e2elMs),
    outputTokens: col((r) => r.outputTokens),
    itlSumMs: col((r) => r.itlSumMs),
    itlCount: col((r) => r.itlCount),
    promptTokens: col((r) => r.promptTokens),
    cachedTokens: col((r) => r.cachedTokens),
    durationS: round.durationS,
  };
}

/**
 * Every verdict metric over the picked requests of the given rounds (`picks[i]` indexes
 * `rounds[i]`; undefined = all of its requests once), written into `out` in VERDICT_METRICS
 * order. NaN where a figure has nothing to count (no cached_tokens, no multi-token request).
 * `scratch` holds at least as many values as are picked (the TTFTs whose p90 is taken).
 */
export function figuresOf(rounds: readonly RoundColumns[], picks: readonly (Int32Array | undefined)[], out: Float64Array, scratch: Float64Array): void {
  let n = 0, ttft = 0, e2el = 0, tpot = 0, tpotN = 0, itl = 0, itlN = 0, prompt = 0, cached = 0, cachedKnown = 0, output = 0, duration = 0;
  for (let k = 0; k < rounds.length; k++) {
    const r = rounds[k]!;
    const pick = picks[k];
    const m = pick ? pick.length : r.n;
    for (let j = 0; j < m; j++) {
      const i = pick ? pick[j]! : j;
      const t = r.ttftMs[i]!;
      scratch[n++] = t;
      ttft += t;
      e2el += r.e2elMs[i]!;
      const out = r.outputTokens[i]!;
      output += out;
      // vLLM's TPOT: (E2E − TTFT) / (output − 1), over requests with more than one token.
      if (out > 1) {
        tpot += (r.e2elMs[i]! - t) / (out - 1);
        tpotN++;
      }
      itl += r.itlSumMs[i]!;
      itlN += r.itlCount[i]!;
      prompt += r.promptTokens[i]!;
      const c = r.cachedTokens[i]!;
      if (!Number.isNaN(c)) {
        cached += c;
        cachedKnown++;
      }
    }
    duration += r.durationS;
  }
  out[0] = n > 0 ? ttft / n : NaN;
  out[1] = n > 0 ? percentile(scratch.subarray(0, n), 90) : NaN;
  out[2] = itlN > 0 ? itl / itlN : NaN;
  out[3] = tpotN > 0 ? tpot / tpotN : NaN;
  out[4] = n > 0 ? e2el / n : NaN;
  out[5] = n > 0 && duration > 0 ? output / duration : NaN;
  out[6] = cachedKnown > 0 && prompt > 0 ? cached / prompt : NaN;
}
