// The HTML report's header: what was run, so a page read weeks later says how to run it again —
// the command line, kvcr-mock's version, the date, each run's URL and model, the workload, its
// seed and the arrivals. run-bench.ts builds it from the options it was given; html-report.ts
// adds the per-run rows from the results and draws it.
import { VERSION } from "../../lib/version.ts";
import { arrivalSpecOf, DEFAULT_SYNTHETIC_REQUESTS, describeArrival, type WorkloadOptions } from "../shared/measure/workload.ts";
import type { BenchOptions } from "./bench-types.ts";
import type { BenchResult } from "./metrics.ts";

export interface ReportHeader {
  /** The command line as a shell would take it back. */
  command: string;
  version: string;
  endpoint: string;
  workload: string;
  seed: number;
  arrivals: string;
}

/** `argv`: the process's (`kvcr-mock bench …`); the first two entries are the runtime and the entry file. */
export function reportHeader(opts: BenchOptions, argv: readonly string[] = process.argv): ReportHeader {
  const arrivals = opts.sweepConcurrency
    ? `closed loop, one run per concurrency: ${opts.sweepConcurrency.join(", ")}`
    : describeArrival(arrivalSpecOf(opts), opts.workload.trace !== undefined);
  return {
    command: ["kvcr-mock", ...argv.slice(2)].map(shellQuote).join(" "),
    version: VERSION,
    endpoint: opts.endpoint,
    workload: describeWorkload(opts.workload),
    seed: opts.workload.seed,
    arrivals: `${arrivals}${opts.warmupRequests > 0 ? `, after ${opts.warmupRequests} warm-up request(s)` : ""}${opts.durationS !== undefined ? `, for at most ${opts.durationS} s` : ""}`,
  };
}

function describeWorkload(w: WorkloadOptions): string {
  if (w.trace !== undefined) return `trace ${w.trace}${w.requests !== undefined ? `, its first ${w.requests} requests` : ""} (trace block size ${w.traceBlockSize})`;
  if (w.random !== undefined) return `random dataset (${fields(w.random)}), ${w.requests ?? DEFAULT_SYNTHETIC_REQUESTS} requests`;
  return `shared-prefix synthetic (${fields(w.synthetic)}), ${w.requests ?? DEFAULT_SYNTHETIC_REQUESTS} requests`;
}

/** `{numPrefixes: 2}` → "num-prefixes 2": the options as their flags spell them. */
function fields(o: object): string {
  return Object.entries(o)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => `${k.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)} ${typeof v === "object" ? JSON.stringify(v) : String(v)}`)
    .join(", ");
}

function shellQuote(arg: string): string {
  return /^[\w@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, `'\\''`)}'`;
}

/** The header as HTML: one definition list, then a row per run (label, URL, model, date of its result). */
export function headerHtml(h: ReportHeader, runs: readonly { label: string; result: Pick<BenchResult, "base_url" | "model_id" | "date"> }[]): string {
  const row = (k: string, v: string) => `<dt>${escapeHtml(k)}</dt><dd>${escapeHtml(v)}</dd>`;
  const runRows = runs.map((r) => `<tr><td>${escapeHtml(r.label)}</td><td>${escapeHtml(r.result.base_url + h.endpoint)}</td><td>${escapeHtml(r.result.model_id)}</td><td>${escapeHtml(r.result.date)}</td></tr>`).join("");
  return `<dl id="run-header">${row("Command", h.command)}${row("kvcr-mock", h.version)}${row("Date", runs[0]?.result.date ?? "")}${row("Workload", h.workload)}${row("Seed", String(h.seed))}${row("Arrivals", h.arrivals)}</dl>
<table id="run-targets"><thead><tr><th>run</th><th>URL</th><th>model</th><th>result date</th></tr></thead><tbody>${runRows}</tbody></table>`;
}

export function escapeHtml(s: string): string {
  return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}
