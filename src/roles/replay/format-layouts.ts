// The human output of a layout replay: each layout's report table (with the hand-over's rows for
// the disaggregated one), then the verdict in one line per figure.
import { VERDICT_METRICS } from "../../core/stats/run-samples.ts";
import type { Verdict, VerdictEntry } from "../../core/stats/verdict.ts";
import { formatReport } from "./format-report.ts";
import type { LayoutOutcome, LayoutReport } from "./layouts.ts";

const LABELS = new Map<string, string>(VERDICT_METRICS.map((m) => [m.key, m.label]));

export function formatLayouts(o: LayoutOutcome): string {
  const parts = Object.entries(o.reports).map(([name, r]) => `Layout ${name}\n${formatReport(r)}${handOverRows(r)}`);
  if (o.verdict) parts.push(verdictText(o.verdict));
  return parts.join("\n");
}

function handOverRows(r: LayoutReport): string {
  const d = r.disaggregation;
  if (!d) return "";
  return [
    `Prefill + decode workers: ${d.prefill_workers} + ${d.decode_workers}`,
    `KV pulls (${d.kv_transfer_timing_mode}): ${d.kv_transfers}, ${(d.kv_transfer_bytes / 1e9).toFixed(2)} GB, mean ${d.mean_kv_transfer_ms.toFixed(1)} ms`,
    `Prompt tokens pulled: ${d.pulled_tokens}`,
    "",
  ].join("\n");
}

function verdictText(v: Verdict): string {
  const lines = ["Verdict:"];
  for (const e of v.entries) lines.push(`  ${e.side} vs ${e.baseline}: ${entryText(e)}`);
  if (v.requestNoiseOnly) lines.push("  one replay per layout: the intervals cover request-to-request noise only");
  return `${lines.join("\n")}\n`;
}

function entryText(e: VerdictEntry): string {
  const label = LABELS.get(e.metric) ?? e.metric;
  if (e.ratio === null) return `${label}: baseline is 0${e.note ? ` (${e.note})` : ""}`;
  const interval = e.ci_low !== null && e.ci_high !== null ? ` (${e.ci_low.toFixed(2)}–${e.ci_high.toFixed(2)})` : "";
  return `${label} ${e.ratio.toFixed(2)}× — ${e.call}${interval}${e.note && e.call !== "higher" && e.call !== "lower" ? `; ${e.note}` : ""}`;
}
