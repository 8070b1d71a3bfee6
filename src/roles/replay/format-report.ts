// The human table of a replay report: vLLM's result rows (roles/shared/measure/result-block.ts), then replay's own.
import type { ReplayReport } from "../../core/replay/report.ts";
import type { RegretSummary } from "../../core/routing/regret.ts";
import { resultBlock, servingRows, type Row } from "../shared/measure/result-block.ts";
import { sessionRows } from "../shared/measure/session-rows.ts";

export function formatReport(r: ReplayReport): string {
  const block = resultBlock();
  const { title, row, end } = block;
  title("Replay Result");
  const afterCounts: Row[] = [];
  if (r.rejected > 0) afterCounts.push(["Rejected (every worker busy)", r.rejected]);
  if (r.queued > 0) afterCounts.push(["Queued by the router (every worker saturated)", r.queued]);
  servingRows(block, r, { afterCounts, afterCache: [["Cached / host-loaded prompt tokens", `${r.cached_tokens} / ${r.host_loaded_tokens}`]], percentiles: [90, 99] });
  title("Replay", "-");
  row("Workers × ranks / router", `${r.num_workers} × ${r.data_parallel_size} / ${r.router_mode}`);
  row("Requests per worker", spread(r.requests_per_worker));
  if (r.data_parallel_size > 1) row("Requests per rank", spread(r.requests_per_rank.flat()));
  row("Preemptions", r.preemptions);
  row("Host (G2) blocks stored", r.host_blocks_stored);
  row("Host stores dropped (token ids lost)", r.host_stores_dropped);
  if (r.regret) regretRows(row, r.regret);
  for (const a of r.by_lora_adapter ?? []) {
    row(`${a.lora_name ?? "base model"}: requests / reuse / mean TTFT (ms)`, `${a.completed} / ${(a.prefix_cache_reuse_ratio * 100).toFixed(1)} % / ${a.mean_ttft_ms.toFixed(2)}`);
  }
  row("Simulated time (s)", r.simulated_time_s.toFixed(2));
  row("Wall time (s)", r.wall_time_s.toFixed(3));
  row("Simulated requests per wall second", r.replay_speed_requests_per_s.toFixed(0));
  if (r.sessions) sessionRows(block, r.sessions);
  return end(r.errors.map((e) => `request ${e.request}: ${e.error}`), r.failed);
}

/** How far decisions were from the best (worker, rank) on the engines' true state (docs/DECISIONS.md "Regret and oracle"). */
function regretRows(row: (label: string, value: string | number) => void, g: RegretSummary): void {
  row("Routed to a best-cache (worker, rank)", `${(g.best_cache_share * 100).toFixed(1)} %`);
  row("Cache regret mean / p99 (blocks)", `${g.mean_blocks.toFixed(2)} / ${g.p99_blocks.toFixed(2)}`);
  if (g.mean_prefill_ms !== undefined) row("Cache regret mean / p99 (prefill ms)", `${g.mean_prefill_ms.toFixed(2)} / ${(g.p99_prefill_ms ?? 0).toFixed(2)}`);
  if (g.load) {
    row("Routed to a least-loaded rank", `${(g.load.least_loaded_share * 100).toFixed(1)} %`);
    row("Load regret mean / p99 (requests)", `${g.load.mean.toFixed(2)} / ${g.load.p99.toFixed(2)}`);
  }
}

/** Few workers: every count; many: min / mean / max. */
function spread(counts: readonly number[]): string {
  if (counts.length <= 16) return counts.join(" ");
  const min = Math.min(...counts);
  const max = Math.max(...counts);
  const mean = counts.reduce((a, b) => a + b, 0) / counts.length;
  return `min ${min} / mean ${mean.toFixed(1)} / max ${max}`;
}
