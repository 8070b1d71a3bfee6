// The human output of a layout replay: each layout's report table (with the hand-over's rows for
// the disaggregated one), then the verdict in one line per figure.
import type { Verdict } from "../../core/stats/verdict.ts";
import { formatVerdict } from "../shared/measure/verdict-text.ts";
import { formatReport } from "./format-report.ts";
import type { LayoutOutcome, LayoutReport } from "./layouts.ts";

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

/** Bench's verdict lines; the one note a single replay per layout needs (replay has no rounds). */
function verdictText(v: Verdict): string {
  const notes = v.requestNoiseOnly ? ["one replay per layout: the intervals cover request-to-request noise only"] : [];
  return `${formatVerdict(v, notes).trimEnd()}\n`;
}
