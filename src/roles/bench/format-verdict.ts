// The verdict as the HTML report's first section (its words come from roles/shared/measure/verdict-text.ts).
import type { Verdict, VerdictEntry } from "../../core/stats/verdict.ts";
import { digitsOf, figureLabel, intervalText, noVerdict, ratioText, verdictNotes } from "../shared/measure/verdict-text.ts";
import { escapeHtml } from "./report-header.ts";

/** The verdict as the report's first section: a table of calls, then the notes. */
export function verdictHtml(v: Verdict): string {
  if (v.entries.length === 0) return `<section id="verdict"><h2>Verdict</h2><p>${escapeHtml(noVerdict(v))}</p></section>`;
  const row = (e: VerdictEntry) =>
    `<tr class="call-${e.call.replace(/ /g, "-")}"><td>${escapeHtml(`${e.side} vs ${e.baseline}`)}</td><td>${escapeHtml(figureLabel(e.metric))}</td><td>${e.ratio !== null ? ratioText(e.ratio, digitsOf(e)) : "-"}</td><td>${escapeHtml(intervalText(e) || "-")}</td><td><b>${escapeHtml(e.call)}</b>${e.note && e.call !== "higher" && e.call !== "lower" ? ` <small>${escapeHtml(e.note)}</small>` : ""}</td></tr>`;
  return `<section id="verdict"><h2>Verdict</h2>
<table><thead><tr><th>compared</th><th>figure</th><th>ratio</th><th>interval</th><th>call</th></tr></thead><tbody>${v.entries.map(row).join("")}</tbody></table>
<ul>${verdictNotes(v).map((n) => `<li>${escapeHtml(n)}</li>`).join("")}</ul></section>`;
}
