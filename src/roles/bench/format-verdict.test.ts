// The verdict in words: one line per side and figure, the notes on what it rests on, the
// sample-size line, and the report's section.
import { describe, expect, test } from "bun:test";
import type { Verdict, VerdictEntry } from "../../core/stats/verdict.ts";
import { entryText, formatVerdict, verdictNotes } from "../shared/measure/verdict-text.ts";
import { verdictHtml } from "./format-verdict.ts";

const entry = (over: Partial<VerdictEntry>): VerdictEntry => ({ metric: "mean_ttft_ms", baseline: "kv", side: "round-robin", baseline_value: 100, side_value: 134, ratio: 1.34, ci_low: 1.21, ci_high: 1.49, call: "higher", confidence: 0.99, p_value: 0.001, min_detectable: 0.05, ...over });
const verdict = (entries: VerdictEntry[], over: Partial<Verdict> = {}): Verdict => ({ entries, sides: ["kv", "round-robin"], rounds: [3, 3], family: entries.length, requestNoiseOnly: false, paired: false, ...over });

describe("format-verdict", () => {
  test("a called figure reads as the ratio, the direction and the interval", () => {
    expect(entryText(entry({}))).toBe("mean TTFT 1.34× higher (1.21–1.49)");
    expect(entryText(entry({ metric: "prefix_cache_reuse_ratio", ratio: 0.55, ci_low: 0.5, ci_high: 0.61, call: "lower" }))).toBe("prefix reuse 0.55× lower (0.50–0.61)");
    // A small but clear difference keeps the digits that show it.
    expect(entryText(entry({ metric: "mean_itl_ms", ratio: 0.9981, ci_low: 0.9972, ci_high: 0.9990, call: "lower" }))).toBe("mean ITL 0.998× lower (0.997–0.999)");
  });

  test("no clear difference, a zero baseline, an unresolved figure and a figure with no interval", () => {
    expect(entryText(entry({ metric: "mean_itl_ms", ratio: 1.02, ci_low: 0.97, ci_high: 1.08, call: "no clear difference" }))).toBe("mean ITL: no clear difference (1.02×, 0.97–1.08)");
    // Two rounds on one degree of freedom: bounds past 100× say only how wide the interval is.
    expect(entryText(entry({ ratio: 0.55, ci_low: 0.000012, ci_high: 5614100.67, call: "no clear difference" }))).toBe("mean TTFT: no clear difference (0.55×, <0.01–>100)");
    expect(entryText(entry({ metric: "prefix_cache_reuse_ratio", baseline_value: 0, side_value: 0.62, ratio: null, ci_low: null, ci_high: null }))).toBe("prefix reuse higher (0.000 → 0.620)");
    expect(entryText(entry({ call: "unresolved", note: "below the load client's own event-loop lag (p99 20.0 ms)", ci_low: null, ci_high: null }))).toBe("mean TTFT: unresolved (below the load client's own event-loop lag (p99 20.0 ms))");
    expect(entryText(entry({ metric: "output_throughput", ratio: 0.97, ci_low: null, ci_high: null, call: "no clear difference", note: "a whole-run figure needs at least 2 rounds per side for an interval" }))).toBe("output throughput: no clear difference (0.97×; a whole-run figure needs at least 2 rounds per side for an interval)");
  });

  test("notes: the family and rounds (more recommended below 5), one round says request noise only, the sample-size line", () => {
    const small = entry({ metric: "mean_itl_ms", call: "no clear difference", min_detectable: 0.23, would_need: { rounds: 7, requests_per_round: 800 } });
    const notes = verdictNotes(verdict([entry({}), small]));
    expect(notes[0]).toBe("95 % intervals for the whole family (Holm over 2 tests), ratio side / baseline; 3 rounds per side (at least 5 are recommended: the spread between stacks rests on them)");
    expect(notes[1]).toBe("round-robin vs kv: too small to show a 10 % difference in mean ITL (could show 23 %); about 7 rounds per side, or about 800 requests per round would");
    expect(verdictNotes(verdict([entry({ would_need: { rounds: 40 }, min_detectable: 2.5, call: "no clear difference" })]))[1]).toBe("round-robin vs kv: too small to show a 10 % difference in mean TTFT (could show only 3.50× or more); about 40 rounds per side would");
    expect(verdictNotes(verdict([entry({ would_need: {}, min_detectable: 1e7, call: "no clear difference" })]))[1]).toBe("round-robin vs kv: too small to show a 10 % difference in mean TTFT (could show nothing under 100×); more rounds than searched would be needed");
    expect(verdictNotes(verdict([entry({})], { rounds: [1, 1], requestNoiseOnly: true }))[0]).toContain("one round per side: the intervals cover request noise only");
    expect(verdictNotes(verdict([entry({})], { rounds: [5, 5] }))[0]).not.toContain("recommended");
    expect(verdictNotes(verdict([entry({})], { rounds: [5, 5], paired: true }))[0]).toContain("5 rounds per side, compared round by round");
    const tooFew = entry({ call: "no clear difference", ci_low: null, ci_high: null, note: "too few requests to tell: 12 in a round, at least 30 are needed" });
    expect(entryText(tooFew)).toBe("mean TTFT: no clear difference (1.34×; too few requests)");
    expect(verdictNotes(verdict([tooFew], { family: 0 }))[0]).toStartWith("no figure could be tested; 3 rounds per side");
    expect(verdictNotes(verdict([tooFew], { family: 0 }))[1]).toBe("too few requests to tell: 12 in a round, at least 30 are needed: no figure was called (send more requests, and --rounds for the spread between stacks)");
  });

  test("the terminal block opens with Verdict:; no entries say why; the report section escapes and marks the call", () => {
    expect(formatVerdict(verdict([entry({})]))).toStartWith("Verdict:\n  round-robin vs kv: mean TTFT 1.34× higher (1.21–1.49)\n  95 % intervals");
    expect(formatVerdict(verdict([], { rounds: [2, 0] }))).toBe("No verdict: round-robin completed no request\n\n");
    const html = verdictHtml(verdict([entry({ side: "<rr>" })]));
    expect(html).toStartWith('<section id="verdict">');
    expect(html).toContain("&lt;rr&gt; vs kv");
    expect(html).toContain('<tr class="call-higher">');
  });
});
