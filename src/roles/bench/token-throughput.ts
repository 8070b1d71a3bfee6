// Output throughput over time from when tokens arrived, not when their requests ended: a request's
// content chunks arrive at sent + TTFT, then one ITL gap after another (the gaps send-request.ts
// already measures), so no extra per-token record is kept. Counting each token in the time bin it
// arrived keeps a steady stream flat; attributing a request's tokens to its end made a sawtooth
// (all of a closed loop's tokens landing in the bins where its requests happened to finish).
import type { TimedRecord } from "./drive-load.ts";

/** Bin widths (seconds) the chart picks from: round numbers, so bins line up with the axis. */
const NICE_BIN_S = [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600];
/** At most this many bins over the longest run; a run of a minute or more gets one per second or wider. */
export const MAX_THROUGHPUT_BINS = 60;

/** The smallest round width giving at most MAX_THROUGHPUT_BINS bins over `durationS`. */
export function throughputBinS(durationS: number): number {
  return NICE_BIN_S.find((w) => durationS / w <= MAX_THROUGHPUT_BINS) ?? Math.ceil(durationS / MAX_THROUGHPUT_BINS);
}

/**
 * Calls `add(tMs, tokens)` for each content chunk of a completed request, tMs since the run's start.
 * A server may pack several tokens into one chunk (usage then counts more tokens than chunks): each
 * chunk carries an equal share. Without streaming the one chunk is the whole answer, at its end.
 */
export function forEachTokenArrival(r: TimedRecord, startMs: number, add: (tMs: number, tokens: number) => void): void {
  if (!r.ok || !Number.isFinite(r.ttftMs) || r.outputTokens <= 0) return;
  const share = r.outputTokens / (r.itlMs.length + 1);
  let t = r.sentMs + r.ttftMs - startMs;
  add(t, share);
  for (const gap of r.itlMs) {
    t += gap;
    add(t, share);
  }
}

/**
 * Output tokens per second in bins of `binS` from the run's start to `durationS`: tokens that
 * arrived in the bin over the part of the bin the run covered. A last bin the run covers less than
 * half of joins the one before (a few tokens over a sliver of time would read as a spike). Null
 * past the run's end (the shorter runs of a comparison).
 */
export function tokenThroughput(records: readonly TimedRecord[], startMs: number, durationS: number, binS: number, bins: number): (number | null)[] {
  const tokens = new Array<number>(bins).fill(0);
  let last = Math.max(0, Math.ceil(durationS / binS) - 1);
  let lastCoveredS = durationS - last * binS;
  if (last > 0 && lastCoveredS < binS / 2) {
    last--;
    lastCoveredS += binS;
  }
  for (const r of records) {
    forEachTokenArrival(r, startMs, (tMs, n) => {
      const b = Math.min(last, Math.max(0, Math.floor(tMs / 1000 / binS)));
      if (b < bins) tokens[b]! += n;
    });
  }
  return tokens.map((n, b) => {
    if (b > last) return null;
    const covered = b === last ? lastCoveredS : binS;
    return covered > 0 ? Math.round((n / covered) * 10) / 10 : null;
  });
}
