// calibrate's report: the fitted costs, then the held-out requests' TTFT, ITL and E2E as measured
// and as replayed with the fit: the errors of their mean, p90 and p99, and per request MAPE, MPE
// and Pearson's r.
import type { MetricAccuracy } from "../../core/calibrate/accuracy.ts";
import type { ParametricModel } from "../../protocol/timing-profile.ts";
import { table } from "../shared/measure/text-table.ts";

const COST_ROWS: [keyof ParametricModel, string][] = [
  ["stepMs", "per step"],
  ["prefillStepMs", "per step that prefills"],
  ["decodeStepMs", "per step that decodes"],
  ["prefillTokenMs", "per new prompt token"],
  ["prefillAttentionMs", "per attended token pair"],
  ["decodeRequestMs", "per decoding request"],
  ["decodeContextMs", "per context token decoded"],
  ["requestMs", "per request, before scheduling"],
];

export function formatCalibration(p: { model: ParametricModel; trained: number; heldOut: number; holdout: number; replays: number; seconds: number; accuracy: { ttft: MetricAccuracy; itl: MetricAccuracy; e2e: MetricAccuracy } }): string {
  const a = p.accuracy;
  const head = `Fitted on ${p.trained} requests in ${p.replays} replays (${p.seconds.toFixed(1)} s); judged on the ${p.heldOut} held out (--holdout ${p.holdout}).\n\n`;
  const costs = table(["cost", "ms"], COST_ROWS.map(([k, label]) => [label, sig(p.model[k])]));
  const cols = [a.ttft, a.itl, a.e2e];
  const ms = (f: (m: MetricAccuracy) => number) => cols.map((m) => fixed(f(m)));
  const pct = (f: (m: MetricAccuracy) => number) => cols.map((m) => signedPct(f(m)));
  const rows: string[][] = [
    ["requests", ...cols.map((m) => String(m.requests))],
    ["mean measured (ms)", ...ms((m) => m.mean.observed)],
    ["mean replayed (ms)", ...ms((m) => m.mean.simulated)],
    ["error of mean", ...pct((m) => m.mean.errorPct)],
    ["error of p90", ...pct((m) => m.p90.errorPct)],
    ["error of p99", ...pct((m) => m.p99.errorPct)],
    ["MAPE per request", ...cols.map((m) => (Number.isFinite(m.mapePct) ? `${m.mapePct.toFixed(1)} %` : "-"))],
    ["MPE per request", ...pct((m) => m.mpePct)],
    ["Pearson r", ...cols.map((m) => (Number.isFinite(m.pearsonR) ? m.pearsonR.toFixed(3) : "-"))],
  ];
  return `${head}${costs}\n${table(["held out", "TTFT", "ITL", "E2E"], rows)}`;
}

function sig(x: number): string {
  if (x === 0) return "0";
  return Math.abs(x) >= 0.01 ? x.toFixed(4).replace(/\.?0+$/, "") : x.toExponential(3);
}

function fixed(x: number): string {
  return Number.isFinite(x) ? x.toFixed(1) : "-";
}

function signedPct(x: number): string {
  return Number.isFinite(x) ? `${x >= 0 ? "+" : "−"}${Math.abs(x).toFixed(1)} %` : "-";
}
