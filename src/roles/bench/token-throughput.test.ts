// Throughput over time from token arrival times: a known timeline (streams at a steady token rate,
// requests back to back) gives a flat series, where binning by request end gave a sawtooth; every
// token is counted once; multi-token chunks and unstreamed answers are placed where they arrived.
import { describe, expect, test } from "bun:test";
import type { TimedRecord } from "./drive-load.ts";
import { forEachTokenArrival, MAX_THROUGHPUT_BINS, throughputBinS, tokenThroughput } from "./token-throughput.ts";

function rec(sentMs: number, ttftMs: number, itlMs: number[], over: Partial<TimedRecord> = {}): TimedRecord {
  const e2elMs = ttftMs + itlMs.reduce((a, b) => a + b, 0);
  return { ok: true, sentMs, ttftMs, itlMs, e2elMs, promptTokens: 10, outputTokens: itlMs.length + 1, index: 0, inFlightAtSend: 1, ...over };
}

describe("token throughput", () => {
  test("4 closed-loop streams at 100 tokens/s each: every bin but the first (TTFT) reads 400 tokens/s", () => {
    // Stream s starts 2.5·s ms in; each request: first token 10 ms after it is sent, then one every
    // 10 ms, 50 tokens; the next request is sent as the last token lands. 5 requests per stream.
    const records: TimedRecord[] = [];
    const startMs = 1000;
    let endMs = 0;
    for (let s = 0; s < 4; s++) {
      let sent = startMs + 2.5 * s + 1;
      for (let k = 0; k < 5; k++) {
        const r = rec(sent, 10, new Array(49).fill(10));
        records.push(r);
        sent += r.e2elMs;
      }
      endMs = Math.max(endMs, sent);
    }
    const durationS = (endMs - startMs) / 1000;
    const binS = throughputBinS(durationS);
    expect(binS).toBe(0.05);
    const bins = Math.ceil(durationS / binS);
    const series = tokenThroughput(records, startMs, durationS, binS, bins);
    const values = series.filter((v): v is number => v !== null);
    expect(values.slice(1, -1).every((v) => v === 400)).toBe(true);
    expect(values[0]).toBeLessThan(400);
    // Each token counted once: the series integrates back to every output token.
    const lastCovered = durationS - (values.length - 1) * binS;
    const integral = values.slice(0, -1).reduce((a, v) => a + v * binS, 0) + values.at(-1)! * lastCovered;
    expect(integral).toBeCloseTo(4 * 5 * 50, 1); // rates are rounded to 0.1 tokens/s

    // The same records binned by request end (the old chart) are mostly empty bins with spikes.
    const byEnd = new Array<number>(bins).fill(0);
    for (const r of records) byEnd[Math.min(bins - 1, Math.floor((r.sentMs + r.e2elMs - startMs) / 1000 / binS))]! += r.outputTokens;
    expect(byEnd.filter((x) => x === 0).length).toBeGreaterThan(bins / 2);
  });

  test("a chunk carrying several tokens counts its share; an unstreamed answer lands at its end; failures count nothing", () => {
    const seen: [number, number][] = [];
    const add = (t: number, n: number) => seen.push([t, n]);
    forEachTokenArrival(rec(100, 20, [10, 10], { outputTokens: 6 }), 100, add);
    expect(seen).toEqual([[20, 2], [30, 2], [40, 2]]);
    seen.length = 0;
    forEachTokenArrival(rec(100, 500, [], { outputTokens: 7 }), 0, add);
    expect(seen).toEqual([[600, 7]]);
    seen.length = 0;
    forEachTokenArrival(rec(0, 5, [1], { ok: false }), 0, add);
    forEachTokenArrival(rec(0, NaN, []), 0, add);
    expect(seen).toEqual([]);
  });

  test("a last bin the run barely covers joins the one before; bins past a shorter run are null", () => {
    // 1.01 s at 0.1 s bins: the sliver [1.0, 1.01) joins [0.9, 1.0).
    const records = [rec(0, 0, new Array(100).fill(10.1))];
    const series = tokenThroughput(records, 0, 1.01, 0.1, 12);
    expect(series.slice(10)).toEqual([null, null]);
    expect(series[9]).toBeCloseTo(11 / 0.11, 6); // tokens at 909 … 1010 ms
  });

  test("round bin widths, at most the bin limit; a minute-long run gets one bin per second", () => {
    expect(throughputBinS(60)).toBe(1);
    expect(throughputBinS(2.5)).toBe(0.05);
    expect(throughputBinS(0.1)).toBe(0.01);
    expect(throughputBinS(3600)).toBe(60);
    for (const d of [0.3, 7, 61, 1000, 100_000]) expect(d / throughputBinS(d)).toBeLessThanOrEqual(MAX_THROUGHPUT_BINS);
  });
});
