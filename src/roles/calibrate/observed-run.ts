// A measured run's document (vLLM's bench serve --save-detailed JSON, kvcr-mock bench's, or
// aiperf's records read as one) as the requests calibrate fits: each completed request's send
// time, prompt and output lengths, cached prompt tokens where the run has them, TTFT and E2E; and
// when the run has no send times, its arrival mode (rate or concurrency). What is missing is
// refused by name; what is assumed is said in `warnings`. Pure.
import type { ObservedRequest } from "../../core/calibrate/observed-workload.ts";
import type { ArrivalSpec } from "../../core/workload/arrivals.ts";
import { KvcrError } from "../../lib/errors.ts";

type Doc = Record<string, unknown>;

/** The per-request arrays calibrate cannot do without. */
export const NEEDED_ARRAYS = ["input_lens", "output_lens", "ttfts", "itls"] as const;

export interface ObservedRun {
  requests: ObservedRequest[];
  /** The worker that served each of `requests`, when the run names one for every request (kvcr-mock bench's `workers`). */
  servedBy?: string[];
  /** Requests the run lists as failed (left out: their times say nothing of the engine). */
  failed: number;
  /** From the run's request_rate / burstiness / max_concurrency, when it has no start_times. */
  arrival?: ArrivalSpec;
  /** What the run says of itself: its model, client, and the workers its requests went to. */
  model?: string;
  backend?: string;
  workers?: number;
  /** From the server's /metrics before and after the run, where the run has them. */
  server?: ServerFacts;
  warnings: string[];
}

export interface ServerFacts {
  /** vllm:cache_config_info's block_size and num_gpu_blocks. */
  blockSize?: number;
  numGpuBlocks?: number;
  /** Over the run: prompt tokens the server's prefix cache hit, of those it looked up. */
  prefixHitShare?: number;
  /** Over the run: the server's own mean TTFT (from its arrival, not the client's send). */
  meanTtftMs?: number;
}

export function observedRun(docIn: unknown, path: string): ObservedRun {
  const bad = (what: string) => new KvcrError("CALIBRATE_BAD_RUN", `--from ${path}: ${what}`);
  if (typeof docIn !== "object" || docIn === null || Array.isArray(docIn)) throw bad("is not a bench result object");
  let doc = docIn as Doc;
  if (Array.isArray(doc.runs)) {
    if (doc.runs.length !== 1) throw bad(`holds ${doc.runs.length} runs; calibrate fits one: save that run alone (bench --save-result without --repeat)`);
    doc = doc.runs[0] as Doc;
  }
  const missing = NEEDED_ARRAYS.filter((k) => !Array.isArray(doc[k]));
  if (missing.length > 0) {
    throw bad(
      `has no per-request times (missing ${missing.join(", ")}); calibrate needs the arrays ${NEEDED_ARRAYS.join(", ")} (and start_times where the client writes them): vllm bench serve --save-result --save-detailed, kvcr-mock bench --save-detailed, or aiperf's profile_export.jsonl`,
    );
  }
  const n = (doc.ttfts as unknown[]).length;
  const arr = (k: string): unknown[] | undefined => {
    const a = doc[k];
    if (a === undefined || a === null) return undefined;
    if (!Array.isArray(a) || a.length !== n) throw bad(`${k} is ${Array.isArray(a) ? `${a.length} long where ttfts is ${n}` : "not an array"}`);
    return a;
  };
  const [inputs, outputs, ttfts, itls] = NEEDED_ARRAYS.map((k) => arr(k)!) as [unknown[], unknown[], unknown[], unknown[]];
  const errors = arr("errors");
  const e2els = arr("e2els");
  const starts = arr("start_times");
  const cached = arr("cached_lens");
  const workers = arr("workers");
  const servedBy: (string | undefined)[] = [];
  const num = (a: unknown[], k: string, i: number, min = 0): number => {
    const v = a[i];
    if (typeof v !== "number" || !Number.isFinite(v) || v < min) throw bad(`${k}[${i}] is ${JSON.stringify(v)}, expected a number ≥ ${min}`);
    return v;
  };
  const warnings: string[] = [];
  const requests: ObservedRequest[] = [];
  let failed = 0;
  let unknownCached = 0;
  for (let i = 0; i < n; i++) {
    const outputTokens = num(outputs, "output_lens", i);
    const ok = errors ? errors[i] === "" || errors[i] === null : outputTokens > 0;
    if (!ok || outputTokens < 1) {
      failed++;
      continue;
    }
    const gaps = itls[i];
    if (!Array.isArray(gaps)) throw bad(`itls[${i}] is ${JSON.stringify(gaps)}, expected a list of gaps in seconds`);
    const ttftMs = num(ttfts, "ttfts", i) * 1000;
    let gapSumMs = 0;
    for (let k = 0; k < gaps.length; k++) gapSumMs += num(gaps, `itls[${i}]`, k) * 1000;
    const promptTokens = num(inputs, "input_lens", i, 1);
    const c = cached?.[i];
    if (cached !== undefined && c !== null && (typeof c !== "number" || !Number.isFinite(c) || c < 0)) throw bad(`cached_lens[${i}] is ${JSON.stringify(c)}, expected a count ≥ 0 or null`);
    if (typeof c !== "number") unknownCached++;
    const w = workers?.[i];
    servedBy.push(typeof w === "string" && w !== "" ? w : undefined);
    requests.push({
      sendMs: starts ? num(starts, "start_times", i, -Infinity) * 1000 : NaN,
      promptTokens,
      outputTokens,
      cachedTokens: typeof c === "number" ? c : NaN,
      ttftMs,
      e2eMs: e2els ? num(e2els, "e2els", i) * 1000 : ttftMs + gapSumMs,
    });
  }
  if (requests.length === 0) throw bad(`has no completed request (${failed} failed)`);
  if (failed > 0) warnings.push(`${failed} failed request(s) left out`);
  if (unknownCached === requests.length) warnings.push("the run has no cached prompt lengths (cached_lens): no prefix reuse is assumed, so a run that did reuse prefixes will fit a slower prefill");
  else if (unknownCached > 0) warnings.push(`${unknownCached} request(s) without a cached prompt length: no reuse is assumed for them`);
  const out: ObservedRun = { requests, failed, warnings };
  if (servedBy.every((w) => w !== undefined)) out.servedBy = servedBy as string[];
  if (typeof doc.model_id === "string" && doc.model_id !== "") out.model = doc.model_id;
  if (typeof doc.backend === "string" && doc.backend !== "") out.backend = doc.backend;
  if (typeof doc.per_worker === "object" && doc.per_worker !== null && Object.keys(doc.per_worker).length > 0) out.workers = Object.keys(doc.per_worker).length;
  const server = serverFacts(doc.server_metrics);
  if (server !== undefined) out.server = server;
  if (unknownCached === requests.length && (server?.prefixHitShare ?? 0) > 0) {
    warnings.push(`the server's own counters say ${(server!.prefixHitShare! * 100).toFixed(1)} % of looked-up prompt tokens were cached over the run (vllm:prefix_cache_hits_total), which the replay cannot place without cached_lens`);
  }
  if (starts === undefined) {
    const arrival = arrivalOf(doc);
    if (arrival !== undefined) out.arrival = arrival;
    warnings.push(`the run has no start_times: ${arrival === undefined ? "arrivals need --request-rate or --concurrency" : `arrivals are drawn as the run's ${describe(arrival)}`}, so a request's replayed times are not its own (vLLM writes start_times since January 2026)`);
  }
  return out;
}

/** What `server_metrics` ({before, after} snapshots of totals and cache_config) says, read leniently: it is context, not the run. */
function serverFacts(m: unknown): ServerFacts | undefined {
  if (typeof m !== "object" || m === null) return undefined;
  const { before, after } = m as { before?: { totals?: Record<string, unknown> }; after?: { totals?: Record<string, unknown>; cache_config?: Record<string, unknown> } };
  const total = (snap: { totals?: Record<string, unknown> } | undefined, k: string) => (typeof snap?.totals?.[k] === "number" ? (snap.totals[k] as number) : undefined);
  const delta = (k: string) => {
    const [a, b] = [total(before, k), total(after, k)];
    return a !== undefined && b !== undefined && b >= a ? b - a : undefined;
  };
  const out: ServerFacts = {};
  const int = (v: unknown) => (typeof v === "string" && /^\d+$/.test(v) && Number(v) >= 1 ? Number(v) : undefined);
  const bs = int(after?.cache_config?.block_size);
  const blocks = int(after?.cache_config?.num_gpu_blocks);
  if (bs !== undefined) out.blockSize = bs;
  if (blocks !== undefined) out.numGpuBlocks = blocks;
  const [queries, hits] = [delta("vllm:prefix_cache_queries_total"), delta("vllm:prefix_cache_hits_total")];
  if (queries !== undefined && hits !== undefined && queries > 0) out.prefixHitShare = hits / queries;
  const [ttftSum, ttftCount] = [delta("vllm:time_to_first_token_seconds_sum"), delta("vllm:time_to_first_token_seconds_count")];
  if (ttftSum !== undefined && ttftCount !== undefined && ttftCount > 0) out.meanTtftMs = (ttftSum / ttftCount) * 1000;
  return Object.keys(out).length > 0 ? out : undefined;
}

/** vLLM's keys: max_concurrency with every request at once; otherwise request_rate (and burstiness). */
function arrivalOf(doc: Doc): ArrivalSpec | undefined {
  const rate = doc.request_rate === "inf" ? Infinity : typeof doc.request_rate === "number" && doc.request_rate > 0 ? doc.request_rate : undefined;
  const concurrency = typeof doc.max_concurrency === "number" && Number.isInteger(doc.max_concurrency) && doc.max_concurrency >= 1 ? doc.max_concurrency : undefined;
  if (concurrency !== undefined && (rate === undefined || rate === Infinity)) return { kind: "concurrency", concurrency };
  if (rate === undefined) return undefined;
  const burstiness = typeof doc.burstiness === "number" && doc.burstiness > 0 ? doc.burstiness : 1;
  return { kind: "rate", requestsPerSecond: rate, burstiness, scaleToRate: true };
}

function describe(a: ArrivalSpec): string {
  if (a.kind === "concurrency") return `max_concurrency ${a.concurrency}`;
  if (a.kind === "rate") return `request_rate ${a.requestsPerSecond}${a.burstiness !== undefined && a.burstiness !== 1 ? ` (burstiness ${a.burstiness})` : ""}`;
  return "trace";
}
