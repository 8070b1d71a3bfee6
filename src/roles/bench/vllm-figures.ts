// The figures of `vllm bench serve`'s result that need each request's timeline: peak output
// tokens per second and peak concurrent requests (both in 1 s bins from the first request's start,
// as vLLM bins them), and request goodput (completed requests within every --goodput SLO).
import type { GoodputSlo } from "../../config/bench.ts";
import type { RequestRecord } from "./send-request.ts";

export interface PeakFigures {
  /** Most output chunks seen in one 1 s bin (vLLM counts a token per chunk here). */
  max_output_tokens_per_s: number;
  /** Most requests active in one 1 s bin. */
  max_concurrent_requests: number;
}

/** Over completed requests, as vLLM: bins of 1 s from the earliest start; a request is active in every bin it touches. */
export function peakFigures(records: readonly RequestRecord[]): PeakFigures {
  const ok = records.filter((r) => r.ok);
  if (ok.length === 0) return { max_output_tokens_per_s: 0, max_concurrent_requests: 0 };
  // Loops, not Math.min(...xs): a long run has more requests than a call's argument limit.
  let t0 = Infinity;
  let end = -Infinity;
  for (const r of ok) [t0, end] = [Math.min(t0, r.sentMs), Math.max(end, r.sentMs + r.e2elMs)];
  const bins = Math.ceil((end - t0) / 1000) + 1;
  const tokens = new Float64Array(bins);
  const active = new Float64Array(bins);
  for (const r of ok) {
    let t = r.sentMs + r.ttftMs;
    const mark = (at: number) => {
      const b = Math.floor((at - t0) / 1000);
      if (b >= 0 && b < bins) tokens[b]!++;
    };
    mark(t);
    for (const gap of r.itlMs) mark((t += gap));
    const last = Math.min(bins - 1, Math.floor((r.sentMs + r.e2elMs - t0) / 1000));
    for (let b = Math.floor((r.sentMs - t0) / 1000); b <= last; b++) active[b]!++;
  }
  return { max_output_tokens_per_s: tokens.reduce((a, b) => Math.max(a, b), 0), max_concurrent_requests: active.reduce((a, b) => Math.max(a, b), 0) };
}

/**
 * Completed requests whose TTFT, TPOT and E2EL are all within the SLOs given (ms). A request of
 * one output token has TPOT 0 here, as vLLM counts it.
 */
export function goodRequests(records: readonly RequestRecord[], slo: GoodputSlo): number {
  let good = 0;
  for (const r of records) {
    if (!r.ok) continue;
    const tpot = r.outputTokens > 1 ? (r.e2elMs - r.ttftMs) / (r.outputTokens - 1) : 0;
    if ((slo.ttft === undefined || r.ttftMs <= slo.ttft) && (slo.tpot === undefined || tpot <= slo.tpot) && (slo.e2el === undefined || r.e2elMs <= slo.e2el)) good++;
  }
  return good;
}
