// A measured run's requests as a replay workload: each at its send time, with its prompt and output
// lengths. Prompts are made up: unique, unless the run says how many prompt tokens the server found
// cached; then those tokens are copied from the latest earlier request long enough (served by the
// same worker, when the run names it) whose first token had come back before this one was sent,
// so the replay's prefix cache finds them as the server's did. Pure.
import type { WorkloadRequest } from "../workload/workload.ts";

export interface ObservedRequest {
  /** When the client sent it (ms on the run's clock); NaN when the run has no send times. */
  sendMs: number;
  promptTokens: number;
  outputTokens: number;
  /** Prompt tokens the server reported cached; NaN when the run does not say. */
  cachedTokens: number;
  ttftMs: number;
  e2eMs: number;
}

/** The request's mean gap between output tokens (ms): NaN with fewer than 2. */
export function meanItlMs(r: ObservedRequest): number {
  return r.outputTokens >= 2 ? (r.e2eMs - r.ttftMs) / (r.outputTokens - 1) : NaN;
}

export interface ObservedWorkload {
  workload: WorkloadRequest[];
  /** Cached prompt tokens the run reported, and those a donor prompt could stand for. */
  cachedTokens: number;
  placedCachedTokens: number;
}

/** `servedBy`: each request's engine when the run names it; a donor is then one the same engine served. */
export function observedWorkload(requests: readonly ObservedRequest[], blockSize: number, servedBy?: ArrayLike<number>): ObservedWorkload {
  const prompts: Uint32Array[] = [];
  let cachedTokens = 0;
  let placedCachedTokens = 0;
  const t0 = requests.reduce((m, r) => (Number.isFinite(r.sendMs) ? Math.min(m, r.sendMs) : m), Infinity);
  for (let i = 0; i < requests.length; i++) {
    const r = requests[i]!;
    const p = new Uint32Array(r.promptTokens);
    // Unique past any shared prefix: the first token names the request, so no two chains meet by chance.
    for (let k = 0; k < p.length; k++) p[k] = ((i + 1) * 65_537 + k) >>> 0;
    const cached = Number.isFinite(r.cachedTokens) ? Math.min(r.cachedTokens, r.promptTokens - 1) : 0;
    if (cached > 0) {
      cachedTokens += cached;
      const want = Math.floor(cached / blockSize) * blockSize;
      const donor = want > 0 ? donorOf(requests, prompts, i, want, servedBy) : -1;
      if (donor >= 0) {
        p.set(prompts[donor]!.subarray(0, want));
        placedCachedTokens += want;
      }
    }
    prompts.push(p);
  }
  const workload = requests.map((r, i): WorkloadRequest => ({
    timestampMs: Number.isFinite(r.sendMs) ? r.sendMs - t0 : 0,
    inputLength: r.promptTokens,
    outputLength: r.outputTokens,
    writeTokens: (out) => out.set(prompts[i]!),
  }));
  return { workload, cachedTokens, placedCachedTokens };
}

/** The latest earlier request (on the same engine, when known) with at least `tokens` prompt tokens whose first token came before request i was sent. */
function donorOf(requests: readonly ObservedRequest[], prompts: readonly Uint32Array[], i: number, tokens: number, servedBy: ArrayLike<number> | undefined): number {
  const sent = requests[i]!.sendMs;
  for (let j = i - 1; j >= 0; j--) {
    const d = requests[j]!;
    if (prompts[j]!.length < tokens || (servedBy !== undefined && servedBy[j] !== servedBy[i])) continue;
    if (Number.isFinite(sent) && !(d.sendMs + d.ttftMs <= sent)) continue;
    return j;
  }
  return -1;
}
