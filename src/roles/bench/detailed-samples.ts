// A saved result's per-request arrays (--save-detailed; vLLM's keys, times in seconds) read back
// as verdict samples: completed requests are those whose `errors` entry is empty. Our own e2els
// and cached_lens are used when present; a vLLM file gives E2E as TTFT plus its gaps (what vLLM's
// client measures) and no per-request cache figures.
import type { RequestSample, RoundSamples } from "../../core/stats/run-samples.ts";
import { KvcrError } from "../../lib/errors.ts";
import type { ClientTiming } from "./client-resolution.ts";

type Doc = Record<string, unknown>;

/** The run's completed requests; undefined when it carries no per-request arrays. */
export function detailedRound(run: Doc, path: string): RoundSamples | undefined {
  const { ttfts, itls, output_lens: outputs, input_lens: inputs, errors, e2els, cached_lens: cached } = run;
  if (ttfts === undefined && itls === undefined) return undefined;
  const bad = (what: string) => new KvcrError("COMPARE_BAD_DETAIL", `--compare: ${path}: ${what}; expected the arrays bench --save-detailed writes`);
  const n = Array.isArray(ttfts) ? ttfts.length : -1;
  for (const [name, a] of [["ttfts", ttfts], ["itls", itls], ["output_lens", outputs], ["input_lens", inputs]] as const) {
    if (!Array.isArray(a) || a.length !== n) throw bad(`${name} is ${Array.isArray(a) ? `${a.length} long where ttfts is ${n}` : "missing or not an array"}`);
  }
  const list = (a: unknown, name: string) => {
    if (a === undefined) return undefined;
    if (!Array.isArray(a) || a.length !== n) throw bad(`${name} is not an array as long as ttfts`);
    return a as unknown[];
  };
  const errs = list(errors, "errors");
  const ends = list(e2els, "e2els");
  const hits = list(cached, "cached_lens");
  const num = (x: unknown, name: string, i: number) => {
    if (typeof x !== "number" || !Number.isFinite(x)) throw bad(`${name}[${i}] is ${JSON.stringify(x)}, not a number`);
    return x;
  };
  const requests: RequestSample[] = [];
  for (let i = 0; i < n; i++) {
    const ok = errs ? errs[i] === "" : num((outputs as unknown[])[i], "output_lens", i) > 0;
    if (!ok) continue;
    const gaps = (itls as unknown[])[i];
    if (!Array.isArray(gaps)) throw bad(`itls[${i}] is not an array`);
    const ttftMs = num((ttfts as unknown[])[i], "ttfts", i) * 1000;
    let itlSumMs = 0;
    gaps.forEach((g, k) => (itlSumMs += num(g, `itls[${i}]`, k) * 1000));
    const hit = hits?.[i];
    requests.push({
      ttftMs,
      e2elMs: ends ? num(ends[i], "e2els", i) * 1000 : ttftMs + itlSumMs,
      outputTokens: num((outputs as unknown[])[i], "output_lens", i),
      itlSumMs,
      itlCount: gaps.length,
      promptTokens: num((inputs as unknown[])[i], "input_lens", i),
      cachedTokens: typeof hit === "number" ? hit : NaN,
    });
  }
  const duration = typeof run.duration === "number" ? run.duration : NaN;
  return { requests, durationS: duration };
}

/** What the runs' client could resolve: the worst lag they recorded, their reads together, their gaps per request. */
export function timingOfDetailed(runs: readonly Doc[]): ClientTiming {
  let lagMs = 0;
  let sameRead = 0;
  let gaps = 0;
  let completed = 0;
  for (const r of runs) {
    const lag = (r.client_event_loop_lag as { p99_ms?: unknown } | undefined)?.p99_ms;
    if (typeof lag === "number") lagMs = Math.max(lagMs, lag);
    const itls = Array.isArray(r.itls) ? (r.itls as unknown[]) : [];
    const g = itls.reduce<number>((s, x) => s + (Array.isArray(x) ? x.length : 0), 0);
    gaps += g;
    if (typeof r.itl_same_read_share === "number") sameRead += r.itl_same_read_share * g;
    if (typeof r.completed === "number") completed += r.completed;
  }
  return { lag: { p99_ms: lagMs }, sameReadShare: gaps > 0 ? sameRead / gaps : 0, gapsPerRequest: completed > 0 ? gaps / completed : 0 };
}
