// A verdict in words, for bench's terminal output and report and replay's layout comparison:
// one line per side and figure ("round-robin vs kv: mean TTFT 1.34× higher (1.21–1.49)"), then
// what it rests on (rounds, the interval's level) and, where the runs were too small to show a
// 10 % change, how many rounds or requests would.
import type { Verdict, VerdictEntry } from "../../../core/stats/verdict.ts";
import { VERDICT_METRICS } from "../../../core/stats/run-samples.ts";

/** Fewer rounds than this and the output says more are recommended. */
export const RECOMMENDED_ROUNDS = 5;

const LABELS = new Map<string, string>(VERDICT_METRICS.map((m) => [m.key, m.label]));

/** A figure's name in words ("mean TTFT"), its key where it has none. */
export function figureLabel(metric: string): string {
  return LABELS.get(metric) ?? metric;
}

export function ratioText(x: number, digits = 2): string {
  return `${x >= 9.995 ? x.toFixed(1) : x.toFixed(digits)}×`;
}

/** Two decimals, more when a called difference would otherwise read as 1.00 (up to 4). */
export function digitsOf(e: VerdictEntry): number {
  if (e.call !== "higher" && e.call !== "lower") return 2;
  let d = 2;
  while (d < 4 && [e.ratio, e.ci_low, e.ci_high].some((x) => x !== null && Number(x.toFixed(d)) === 1)) d++;
  return d;
}

/** Beyond these a bound says only that the interval is that wide (a 2-round t interval can reach 10⁹). */
const BOUND_LOW = 0.01;
const BOUND_HIGH = 100;

export function intervalText(e: VerdictEntry): string {
  const d = digitsOf(e);
  const bound = (x: number) => (x < BOUND_LOW ? `<${BOUND_LOW}` : x > BOUND_HIGH ? `>${BOUND_HIGH}` : x.toFixed(d));
  return e.ci_low !== null && e.ci_high !== null ? `${bound(e.ci_low)}–${bound(e.ci_high)}` : "";
}

/** "mean TTFT 1.34× higher (1.21–1.49)", "mean ITL: no clear difference (1.02×, 0.97–1.08)". */
export function entryText(e: VerdictEntry): string {
  const name = figureLabel(e.metric);
  const ci = intervalText(e);
  if (e.call === "unresolved") return `${name}: unresolved (${e.note})`;
  if (e.ratio === null) {
    const moved = `${fmt(e.baseline_value)} → ${fmt(e.side_value)}`;
    return e.call === "no clear difference" ? `${name}: no clear difference (${moved})` : `${name} ${e.call} (${moved})`;
  }
  // Too few requests is said once, in the notes, not on every figure.
  const why = e.ci_low === null && e.note ? (e.note.startsWith("too few requests") ? "; too few requests" : `; ${e.note}`) : "";
  if (e.call === "no clear difference") return `${name}: no clear difference (${[ratioText(e.ratio), ci].filter(Boolean).join(", ")}${why})`;
  return `${name} ${ratioText(e.ratio, digitsOf(e))} ${e.call}${ci ? ` (${ci})` : ""}`;
}

/** A detectable change: "23 %" below 100 %, beyond that the ratio ("only 2.8× or more"). */
function changeText(change: number | null): string {
  if (change === null || !Number.isFinite(change)) return "no finite change";
  if (change < 1) return `${(change * 100).toFixed(0)} %`;
  return 1 + change > BOUND_HIGH ? `nothing under ${BOUND_HIGH}×` : `only ${ratioText(1 + change)} or more`;
}

function fmt(x: number): string {
  return Math.abs(x) >= 100 ? x.toFixed(0) : Math.abs(x) >= 1 ? x.toFixed(2) : x.toFixed(3);
}

export function noVerdict(v: Verdict): string {
  const empty = v.sides.filter((_, i) => v.rounds[i] === 0);
  return empty.length > 0 ? `No verdict: ${empty.join(", ")} completed no request` : "No verdict: the sides report no figure in common";
}

/** What the verdict rests on, then the sample-size check: lines without the per-figure calls. */
export function verdictNotes(v: Verdict): string[] {
  const notes: string[] = [];
  const rounds = Math.min(...v.rounds);
  const level = v.family > 0 ? `95 % intervals for the whole family (Holm over ${v.family} test${v.family === 1 ? "" : "s"}), ratio side / baseline` : "no figure could be tested";
  if (v.requestNoiseOnly) notes.push(`${level}; one round per side: the intervals cover request noise only, not the spread between fresh stacks (--rounds ${RECOMMENDED_ROUNDS} for that)`);
  else notes.push(`${level}; ${v.rounds.every((r) => r === rounds) ? `${rounds} rounds` : `${v.rounds.join(" / ")} rounds`} per side${v.paired ? ", compared round by round (each round's sides ran back to back on the same requests)" : ""}${rounds < RECOMMENDED_ROUNDS ? ` (at least ${RECOMMENDED_ROUNDS} are recommended: the spread between stacks rests on them)` : ""}`);
  const tooFew = v.entries.find((e) => e.note?.startsWith("too few requests"));
  if (tooFew) notes.push(`${tooFew.note}: no figure was called (send more requests, and --rounds for the spread between stacks)`);
  for (const side of new Set(v.entries.map((e) => e.side))) {
    const small = v.entries.filter((e) => e.side === side && e.would_need !== undefined);
    if (small.length === 0) continue;
    const figures = small.map((e) => `${figureLabel(e.metric)} (could show ${changeText(e.min_detectable)})`).join(", ");
    const rounds = small.every((e) => e.would_need!.rounds !== undefined) ? Math.max(...small.map((e) => e.would_need!.rounds!)) : undefined;
    const requests = small.every((e) => e.would_need!.requests_per_round !== undefined) ? Math.max(...small.map((e) => e.would_need!.requests_per_round!)) : undefined;
    const would = [rounds !== undefined ? `about ${rounds} rounds per side` : undefined, requests !== undefined ? `about ${requests} requests per round` : undefined].filter(Boolean).join(", or ");
    notes.push(`${side} vs ${small[0]!.baseline}: too small to show a 10 % difference in ${figures}${would ? `; ${would} would` : "; more rounds than searched would be needed"}`);
  }
  return notes;
}

/** The verdict as terminal text (first in bench's output), with bench's notes unless others are given. */
export function formatVerdict(v: Verdict, notes: readonly string[] = verdictNotes(v)): string {
  if (v.entries.length === 0) return `${noVerdict(v)}\n\n`;
  const lines = ["Verdict:"];
  for (const e of v.entries) lines.push(`  ${e.side} vs ${e.baseline}: ${entryText(e)}`);
  for (const n of notes) lines.push(`  ${n}`);
  return lines.join("\n") + "\n\n";
}
