// `--report FILE.html`: one self-contained page (uPlot's JS and CSS inlined at build time, the
// data as JSON; no network) opening with a comparison's verdict (format-verdict.ts), then a header
// saying what was run (report-header.ts), the warnings (the load client's lag and saturation among
// them) above the figures they qualify, then, per run
// (router mode or concurrency point): TTFT and ITL distributions, latency vs load, output
// throughput over time (from token arrival times, token-throughput.ts) and prefix-cache reuse,
// plus the side-by-side figures; with faults or an audit (report-observed.ts) also fault windows
// shaded on every time chart, index accuracy over time and the regret histogram. Charts are built
// from records here; the page only draws them, each as wide as the window.
import uplotCss from "uplot/dist/uPlot.min.css" with { type: "text" };
import uplotJs from "uplot/dist/uPlot.iife.min.js" with { type: "text" };
import { percentile } from "../../core/replay/stats.ts";
import type { TimedRecord } from "./drive-load.ts";
import type { ReportRun } from "./bench-types.ts";
import { formatSideBySide } from "./format-result.ts";
import type { BenchResult } from "./metrics.ts";
import type { RunObservation } from "./observe-run.ts";
import { escapeHtml, headerHtml, type ReportHeader } from "./report-header.ts";
import { accuracyChart, faultWindows, regretChart, type FaultWindow } from "./report-observed.ts";
import { throughputBinS, tokenThroughput } from "./token-throughput.ts";

export interface ChartSpec {
  id: string;
  title: string;
  xLabel: string;
  yLabel: string;
  /** x values, then one y array per run (null = no point). */
  data: (number | null)[][];
  /** Series labels when they are not one per run. */
  series?: string[];
  /** Draw bars (a histogram) instead of lines. */
  bars?: boolean;
  /** Fault windows to shade (time charts). */
  windows?: FaultWindow[];
  /** The y axis starts at 0 (a rate: a steady one then reads flat, not magnified). */
  yFromZero?: boolean;
}

/** The number of charts every report has (the Chromium test counts them); an audit adds accuracy, regret adds its histogram. */
export const CHART_COUNT = 5;
const QUANTILES = Array.from({ length: 101 }, (_, i) => i);
const LOAD_BINS = 40;
const REUSE_BINS = 50;

export function buildCharts(runs: readonly ReportRun[]): ChartSpec[] {
  const ok = runs.map((r) => r.records.filter((x) => x.ok));
  const quantiles = (values: number[]) => {
    const a = Float64Array.from(values);
    return QUANTILES.map((q) => (a.length > 0 ? round(percentile(a, q)) : null));
  };
  const charts: ChartSpec[] = [
    { id: "ttft", title: "TTFT distribution", xLabel: "percentile", yLabel: "TTFT (ms)", data: [QUANTILES, ...ok.map((rs) => quantiles(rs.map((r) => r.ttftMs)))] },
    { id: "itl", title: "ITL distribution", xLabel: "percentile", yLabel: "ITL (ms)", data: [QUANTILES, ...ok.map((rs) => quantiles(rs.flatMap((r) => r.itlMs)))] },
  ];

  // Latency vs load: median TTFT of the requests sent with k in flight, k binned.
  const maxLoad = Math.max(1, ...ok.flatMap((rs) => rs.map((r) => r.inFlightAtSend)));
  const binWidth = Math.max(1, Math.ceil(maxLoad / LOAD_BINS));
  const loadX = Array.from({ length: Math.ceil(maxLoad / binWidth) }, (_, b) => (b + 1) * binWidth);
  charts.push({
    id: "load",
    title: "Median TTFT vs requests in flight at send",
    xLabel: "requests in flight",
    yLabel: "median TTFT (ms)",
    data: [loadX, ...ok.map((rs) => loadX.map((_, b) => median(rs.filter((r) => Math.ceil(r.inFlightAtSend / binWidth) - 1 === b).map((r) => r.ttftMs))))],
  });

  // Output tokens per second, each token in the bin it arrived in; one round bin width for every run (at most 60 bins over the longest).
  const longestS = Math.max(0.001, ...runs.map((r) => r.result.duration));
  const binS = throughputBinS(longestS);
  const bins = Math.max(1, Math.ceil(longestS / binS));
  const windows = faultWindows(runs.map((r) => r.result));
  charts.push({
    id: "throughput",
    windows,
    yFromZero: true,
    title: `Output throughput over time (tokens counted when they arrived, ${binS} s bins)`,
    xLabel: "seconds since start (bin middle)",
    yLabel: "output tokens/s",
    data: [Array.from({ length: bins }, (_, b) => round((b + 0.5) * binS)), ...runs.map((run, i) => tokenThroughput(ok[i]!, run.startMs, run.result.duration, binS, bins))],
  });

  // Prefix reuse: cumulative cached / prompt tokens as the run's requests complete (in send order).
  const rX = Array.from({ length: REUSE_BINS }, (_, b) => round(((b + 1) / REUSE_BINS) * 100));
  charts.push({
    id: "reuse",
    title: "Prefix-cache reuse (cumulative, cached / prompt tokens)",
    xLabel: "% of completed requests",
    yLabel: "reuse ratio",
    data: [
      rX,
      ...ok.map((rs) => {
        const sorted = [...rs].sort((a, b) => a.sentMs - b.sentMs);
        return rX.map((_, b) => {
          const upTo = Math.ceil(((b + 1) / REUSE_BINS) * sorted.length);
          let cached = 0;
          let prompt = 0;
          let known = false;
          for (let k = 0; k < upTo; k++) {
            const r = sorted[k]!;
            prompt += r.promptTokens;
            if (r.cachedTokens !== undefined) {
              known = true;
              cached += r.cachedTokens;
            }
          }
          return known && prompt > 0 ? round(cached / prompt, 4) : null;
        });
      }),
    ],
  });
  const labels = runs.map((r) => r.label);
  const accuracy = accuracyChart(labels, runs.map((r) => r.result));
  if (accuracy) charts.push(accuracy);
  const regret = regretChart(labels, runs.map((r) => r.result));
  if (regret) charts.push(regret);
  return charts;
}

export interface ReportOptions {
  title: string;
  percentiles: readonly number[];
  header?: ReportHeader;
  /** The verdict section (HTML), first on the page. */
  verdict?: string;
  /** Rounds each run pools (said above the figures). */
  rounds?: number;
}

export function renderHtml(runs: readonly ReportRun[], opts: ReportOptions): string {
  const payload = { labels: runs.map((r) => r.label), charts: buildCharts(runs) };
  const json = JSON.stringify(payload).replace(/</g, "\\u003c");
  const pooled = (opts.rounds ?? 1) > 1 ? `each run over its ${opts.rounds} rounds` : undefined;
  const summary = formatSideBySide(runs.map((r) => r.result), opts.percentiles, pooled);
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(opts.title)}</title>
<style>${uplotCss}
body{font:14px system-ui,sans-serif;margin:24px;color:#222;background:#fff}
h1{font-size:20px} pre{background:#f6f6f6;padding:12px;overflow:auto}
#run-header{display:grid;grid-template-columns:max-content 1fr;gap:2px 12px;margin:0 0 12px}
#run-header dt{font-weight:600} #run-header dd{margin:0;font-family:ui-monospace,monospace;overflow-wrap:anywhere}
#run-targets{border-collapse:collapse;margin:0 0 12px} #run-targets td,#run-targets th{border:1px solid #ddd;padding:2px 8px;text-align:left}
.chart{margin:18px 0;width:100%}
#verdict table{border-collapse:collapse} #verdict td,#verdict th{border:1px solid #ddd;padding:2px 8px;text-align:left}
#verdict .call-higher td:last-child,#verdict .call-lower td:last-child{background:#eef6ee} #verdict .call-unresolved td:last-child{background:#fbf1e6}
#warnings li{color:#8a4b00}
</style></head>
<body><h1>${escapeHtml(opts.title)}</h1>
${opts.verdict ?? ""}
${opts.header ? headerHtml(opts.header, runs) : ""}
${warningList(runs)}
<pre id="summary">${escapeHtml(summary)}</pre>
${faultList(runs)}
<div id="charts"></div>
<script>${uplotJs.replace(/<\/script/gi, "<\\/script")}</script>
<script>
(function () {
  var R = ${json};
  var colors = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2"];
  var root = document.getElementById("charts");
  var plots = [];
  // Every chart as wide as the page; redrawn at the new width when the page's width changes.
  var width = function () { return Math.max(320, root.clientWidth); };
  R.charts.forEach(function (c) {
    var el = document.createElement("div");
    el.className = "chart";
    el.id = "chart-" + c.id;
    var wins = c.windows || [];
    el.setAttribute("data-fault-windows", String(wins.length));
    root.appendChild(el);
    var bars = c.bars && uPlot.paths && uPlot.paths.bars ? uPlot.paths.bars({ size: [0.8, 60] }) : null;
    var series = [{ label: c.xLabel }].concat((c.series || R.labels).map(function (l, i) {
      var color = colors[i % colors.length];
      return bars
        ? { label: l, stroke: color, fill: color + "55", width: 1, paths: bars, points: { show: false } }
        : { label: l, stroke: color, width: 2, spanGaps: true, points: { show: c.data[0].length <= 60 } };
    }));
    // Fault windows: shaded behind the series in the colour of their run, a 2 px line when instant.
    var shade = { hooks: { drawClear: [function (u) {
      var ctx = u.ctx;
      ctx.save();
      wins.forEach(function (w) {
        var x0 = u.valToPos(w.from_s, "x", true), x1 = u.valToPos(w.to_s, "x", true);
        ctx.fillStyle = colors[w.run % colors.length] + "30";
        ctx.fillRect(x0, u.bbox.top, Math.max(2, x1 - x0), u.bbox.height);
      });
      ctx.restore();
    }] } };
    plots.push(new uPlot({
      title: c.title, width: width(), height: 320,
      scales: c.yFromZero ? { x: { time: false }, y: { range: function (u, min, max) { return [0, max > 0 ? max * 1.1 : 1]; } } } : { x: { time: false } },
      axes: [{ label: c.xLabel }, { label: c.yLabel, size: 70 }],
      series: series,
      plugins: wins.length > 0 ? [shade] : []
    }, c.data, el));
  });
  // Watching the container (not only the window) also catches a scroll bar appearing once the charts are in.
  var drawn = -1; // the first fit() sizes every chart to the width the page has once they are all in
  var fit = function () {
    if (width() === drawn) return;
    drawn = width();
    plots.forEach(function (u) { u.setSize({ width: drawn, height: 320 }); });
  };
  if (typeof ResizeObserver === "function") new ResizeObserver(fit).observe(root);
  window.addEventListener("resize", fit);
  fit();
})();
</script></body></html>
`;
}

/** Every run's warnings (a lagging or saturated load client, a warm cache), above the figures they qualify. */
function warningList(runs: readonly ReportRun[]): string {
  const items = runs.flatMap((r) => r.result.warnings.map((w) => `<li>${escapeHtml(`${runs.length > 1 ? `[${r.label}] ` : ""}${w}`)}</li>`));
  return items.length > 0 ? `<h2>Warnings</h2>\n<ul id="warnings">${items.join("")}</ul>` : "";
}

/** The applied faults as a list under the summary (the shaded windows' key). */
function faultList(runs: readonly ReportRun[]): string {
  const items = runs.flatMap((r) => (r.result.faults ?? []).map((f) => `<li>${escapeHtml(`${runs.length > 1 ? `[${r.label}] ` : ""}${f.applied_s.toFixed(2)} s${f.ends_at_s !== null && f.ends_at_s > f.applied_s ? `–${f.ends_at_s.toFixed(2)} s` : ""}: ${f.kind} on ${f.target}${f.error ? ` (not applied: ${f.error})` : ""}`)}</li>`));
  return items.length > 0 ? `<h2>Faults (shaded on the time charts)</h2>\n<ul id="faults">${items.join("")}</ul>` : "";
}

function median(values: number[]): number | null {
  return values.length === 0 ? null : round(percentile(Float64Array.from(values), 50));
}

function round(x: number, digits = 3): number {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}
