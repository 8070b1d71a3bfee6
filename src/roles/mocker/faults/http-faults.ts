// HTTP faults of POST /v1/generate: what the fault table means for one request to (worker, rank)
// (an error answer, a hang, a cut stream, added latency), and the token-sink wrappers that delay
// or cut a stream. `slow` is not here: it scales the rank's step durations (rank-engine.ts).
import type { MsDistribution } from "../../../protocol/faults.ts";
import type { GenerateSummary } from "../../../protocol/generate.ts";
import type { TokenSink } from "../token-stream.ts";
import { HTTP_KINDS, type FaultTable } from "./fault-table.ts";

export interface RequestFaultPlan {
  /** Answer this status with an OpenAI error body instead of serving. */
  error?: { status: 429 | 500 | 503; faultId: string };
  /** Read the request, never answer (until the client leaves or the mocker closes). */
  hang?: boolean;
  /** Reset the connection after this many tokens reached the client. */
  cutAfterTokens?: number;
  /** Added time to first token and per later token, ms (sampled per request / per token). */
  latency?: { ttftMs: number; perTokenMs: () => number };
}

/** What the faults in effect do to one request; undefined when none applies (the common case). */
export function planRequest(table: FaultTable, worker: number, rank: number, random: () => number = Math.random): RequestFaultPlan | undefined {
  if (!table.any(HTTP_KINDS)) return undefined;
  const err = table.find("http_error", worker, rank);
  if (err && random() < err.spec.rate) {
    table.hit(err);
    return { error: { status: err.spec.status, faultId: err.view.id } };
  }
  const hang = table.find("hang", worker, rank);
  if (hang && random() < hang.spec.rate) {
    table.hit(hang);
    return { hang: true };
  }
  let plan: RequestFaultPlan | undefined;
  const cut = table.find("cut_stream", worker, rank);
  if (cut && random() < cut.spec.rate) {
    table.hit(cut);
    (plan ??= {}).cutAfterTokens = cut.spec.after_tokens;
  }
  const lat = table.find("latency", worker, rank);
  if (lat) {
    table.hit(lat);
    const perToken = lat.spec.per_token_ms;
    (plan ??= {}).latency = { ttftMs: sampleMs(lat.spec.ttft_ms, random), perTokenMs: () => sampleMs(perToken, random) };
  }
  return plan;
}

/** One draw of a fixed or distributed delay, ms. */
export function sampleMs(d: MsDistribution, random: () => number): number {
  if (typeof d === "number") return d;
  if (d.dist === "uniform") return Math.min(d.min, d.max) + random() * Math.abs(d.max - d.min);
  return Math.max(0, -d.mean * Math.log(1 - random()));
}

/**
 * Delays a stream: the first token `ttftMs` later than it came, each later one `perTokenMs()`
 * more than the one before (the delays add up), order kept; the summary follows the last token.
 */
export function delayedSink(inner: TokenSink, ttftMs: number, perTokenMs: () => number): TokenSink & { cancel(): void } {
  const queue: ({ at: number; token: number } | { at: number; summary: GenerateSummary })[] = [];
  let addedMs = ttftMs;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let lastAt = 0;
  const one = [0];
  const drain = () => {
    timer = undefined;
    const now = performance.now();
    while (queue.length > 0 && queue[0]!.at <= now) {
      const item = queue.shift()!;
      if ("token" in item) {
        one[0] = item.token;
        inner.tokens(one);
      } else inner.finish(item.summary);
    }
    arm();
  };
  const arm = () => {
    if (timer === undefined && queue.length > 0) timer = setTimeout(drain, Math.max(0, queue[0]!.at - performance.now()));
  };
  const at = (extraMs: number) => (lastAt = Math.max(lastAt, performance.now() + extraMs));
  let first = true;
  return {
    tokens(ids) {
      for (const id of ids) {
        if (!first) addedMs += perTokenMs();
        first = false;
        queue.push({ at: at(addedMs), token: id });
      }
      arm();
    },
    finish(summary) {
      queue.push({ at: at(0), summary });
      arm();
    },
    cancel() {
      clearTimeout(timer);
      queue.length = 0;
    },
  };
}

/** Passes `afterTokens` tokens on; the next token calls `cut` once instead (a request done by then ends normally). */
export function cuttingSink(inner: TokenSink, afterTokens: number, cut: () => void): TokenSink {
  let left = afterTokens;
  let done = false;
  const stop = () => {
    if (!done) {
      done = true;
      cut();
    }
  };
  return {
    tokens(ids) {
      if (done) return;
      if (ids.length <= left) {
        left -= ids.length;
        inner.tokens(ids);
        return;
      }
      if (left > 0) inner.tokens(ids.slice(0, left));
      left = 0;
      stop();
    },
    finish(summary) {
      // The request finished within k tokens: nothing to cut.
      if (!done) inner.finish(summary);
    },
  };
}
