// Human tables of a bench run: one run laid out like `vllm bench serve`'s result block, several
// runs (router modes, concurrency points) side by side, and replay's prediction beside the
// measurement (--with-replay).
import { METRIC_NAMES, resultBlock, servingRows, type Row } from "../shared/measure/result-block.ts";
import { table } from "../shared/measure/text-table.ts";
import { sessionColumns, sessionRows } from "../shared/measure/session-rows.ts";
import { clientRows, unresolvedCell, type ClientFigures } from "./client-resolution.ts";
import { METRICS, percentileKey, type BenchResult } from "./metrics.ts";

const num = (r: BenchResult, key: string) => (r as unknown as Record<string, number>)[key]!;

/** A run's result and what it says about its load client. */
export type ShownResult = BenchResult & ClientFigures;

export function formatResult(r: ShownResult, percentiles: readonly number[]): string {
  const block = resultBlock();
  const { title, row, end } = block;
  title(r.label ? `Serving Benchmark Result (${r.label})` : "Serving Benchmark Result");
  const afterCounts: Row[] = [];
  if (r.aborted > 0) afterCounts.push(["Aborted requests", r.aborted]);
  if (r.max_concurrency !== null) afterCounts.push(["Maximum request concurrency", r.max_concurrency]);
  if (r.request_rate !== "inf") afterCounts.push(["Request rate configured (RPS)", r.request_rate.toFixed(2)]);
  // vLLM prints these beside its throughputs; here they follow the reuse ratio.
  const afterCache: Row[] = [["Peak output token throughput (tok/s)", r.max_output_tokens_per_s.toFixed(2)], ["Peak concurrent requests", r.max_concurrent_requests.toFixed(2)]];
  if (r.request_goodput !== null) afterCache.unshift(["Request goodput (req/s)", r.request_goodput.toFixed(2)]);
  servingRows(block, r, { afterCounts, afterCache, percentiles, clientRows: clientRows(r), unresolved: r.unresolved_figures });
  if (r.sessions) sessionRows(block, r.sessions);
  if (Object.keys(r.per_worker).length > 0) {
    title("Per worker", "-");
    row("Requests per worker", spread(r.per_worker));
  }
  if (r.failed > 0) {
    title("Errors", "-");
    for (const [k, v] of Object.entries(r.error_breakdown)) row(k, v);
  }
  return end(r.errors, r.failed);
}

/** Several runs as columns; the client's lag and CPU just above the latencies, figures it could not resolve named, not printed. */
export function formatSideBySide(results: readonly ShownResult[], percentiles: readonly number[], note?: string): string {
  const rows: [string, (r: ShownResult) => string][] = [
    ["completed / failed", (r) => `${r.completed} / ${r.failed}`],
    ["duration (s)", (r) => r.duration.toFixed(2)],
    ["request throughput (req/s)", (r) => r.request_throughput.toFixed(2)],
    ["output throughput (tok/s)", (r) => r.output_throughput.toFixed(1)],
    ["total token throughput (tok/s)", (r) => r.total_token_throughput.toFixed(1)],
    ["prefix cache reuse ratio", (r) => (r.prefix_cache_reuse_ratio === null ? "n/a" : r.prefix_cache_reuse_ratio.toFixed(4))],
    ["client lag p99 (ms)", (r) => (r.client_event_loop_lag ? r.client_event_loop_lag.p99_ms.toFixed(1) : "-")],
    ["client CPU (share of a core)", (r) => (r.client_cpu_share !== undefined ? `${(r.client_cpu_share * 100).toFixed(0)} %` : "-")],
    ["tokens read at once", (r) => (r.itl_same_read_share !== undefined ? `${(r.itl_same_read_share * 100).toFixed(1)} %` : "-")],
  ];
  const ms = (key: string) => (r: ShownResult) => {
    const why = r.unresolved_figures?.[key];
    return why !== undefined ? unresolvedCell(why) : num(r, key).toFixed(2);
  };
  for (const m of METRICS) {
    const short = METRIC_NAMES[m].short;
    rows.push([`mean ${short} (ms)`, ms(`mean_${m}_ms`)], [`median ${short} (ms)`, ms(`median_${m}_ms`)]);
    for (const q of percentiles) rows.push([`p${q} ${short} (ms)`, ms(percentileKey(q, m))]);
  }
  rows.push(["errors", (r) => Object.entries(r.error_breakdown).map(([k, v]) => `${k}:${v}`).join(" ") || "-"]);
  rows.push(["per worker", (r) => (Object.keys(r.per_worker).length > 0 ? spread(r.per_worker, 0) : "-")]);
  rows.push(...sessionColumns(results));
  const names = results.map((r, i) => r.label ?? `run ${i + 1}`);
  const text = table(["", ...names], rows.map(([label, f]) => [label, ...results.map(f)]));
  const why = results.flatMap((r, i) => {
    const byReason = new Map<string, string[]>();
    for (const [key, reason] of Object.entries(r.unresolved_figures ?? {})) byReason.set(reason, [...(byReason.get(reason) ?? []), key]);
    return [...byReason].map(([reason, keys]) => `unresolved in ${names[i]}: ${keys.join(", ")}: ${reason}`);
  });
  return (note ? `(${note})\n` : "") + text + why.map((w) => `${w}\n`).join("");
}

export interface ComparedFigure {
  label: string;
  predicted: number;
  measured: number;
  digits?: number;
}


/** Up to `listed` workers: every count; more: min / mean / max (columns stay narrow side by side). */
function spread(perWorker: Record<string, number>, listed = 8): string {
  const entries = Object.entries(perWorker);
  if (entries.length <= listed) return entries.map(([w, n]) => `${w}:${n}`).join(" ");
  const counts = entries.map(([, n]) => n);
  const mean = counts.reduce((a, b) => a + b, 0) / counts.length;
  return `${entries.length} workers, min ${Math.min(...counts)} / mean ${mean.toFixed(1)} / max ${Math.max(...counts)}`;
}

/** Replay's prediction beside the live measurement, with the measured/predicted ratio. */
export function formatPrediction(figures: readonly ComparedFigure[]): string {
  return table(
    ["", "replay (predicted)", "live (measured)", "live / replay"],
    figures.map((f) => [f.label, f.predicted.toFixed(f.digits ?? 2), f.measured.toFixed(f.digits ?? 2), f.predicted > 0 ? `${(f.measured / f.predicted).toFixed(2)}×` : "-"]),
  );
}
