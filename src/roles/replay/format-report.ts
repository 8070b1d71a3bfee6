// The human table of a replay report, laid out like vLLM's benchmark_serving result block.
import type { ReplayReport } from "../../core/replay/report.ts";
import { resultBlock } from "../result-block.ts";

export function formatReport(r: ReplayReport): string {
  const { title, row, end } = resultBlock();
  title("Replay Result");
  row("Successful requests", r.completed);
  row("Failed requests", r.failed);
  if (r.rejected > 0) row("Rejected (every worker busy)", r.rejected);
  if (r.queued > 0) row("Queued by the router (every worker saturated)", r.queued);
  row("Benchmark duration (s)", r.duration.toFixed(2));
  row("Total input tokens", r.total_input_tokens);
  row("Total generated tokens", r.total_output_tokens);
  row("Request throughput (req/s)", r.request_throughput.toFixed(2));
  row("Output token throughput (tok/s)", r.output_throughput.toFixed(2));
  row("Total token throughput (tok/s)", r.total_token_throughput.toFixed(2));
  row("Prefix cache reuse ratio", r.prefix_cache_reuse_ratio.toFixed(4));
  row("Cached / host-loaded prompt tokens", `${r.cached_tokens} / ${r.host_loaded_tokens}`);
  for (const [metric, name] of [["ttft", "Time to First Token"], ["tpot", "Time per Output Token (excl. 1st token)"], ["itl", "Inter-token Latency"], ["e2el", "End-to-end Latency"]] as const) {
    title(name, "-");
    const short = metric.toUpperCase().replace("E2EL", "E2EL");
    const get = (stat: string) => (r as unknown as Record<string, number>)[`${stat}_${metric}_ms`]!;
    row(`Mean ${short} (ms)`, get("mean").toFixed(2));
    row(`Median ${short} (ms)`, get("median").toFixed(2));
    row(`P90 ${short} (ms)`, get("p90").toFixed(2));
    row(`P99 ${short} (ms)`, get("p99").toFixed(2));
  }
  title("Replay", "-");
  row("Workers × ranks / router", `${r.num_workers} × ${r.data_parallel_size} / ${r.router_mode}`);
  row("Requests per worker", spread(r.requests_per_worker));
  if (r.data_parallel_size > 1) row("Requests per rank", spread(r.requests_per_rank.flat()));
  row("Preemptions", r.preemptions);
  row("Host (G2) blocks stored", r.host_blocks_stored);
  row("Host stores dropped (token ids lost)", r.host_stores_dropped);
  row("Simulated time (s)", r.simulated_time_s.toFixed(2));
  row("Wall time (s)", r.wall_time_s.toFixed(3));
  row("Simulated requests per wall second", r.replay_speed_requests_per_s.toFixed(0));
  return end(r.errors.map((e) => `request ${e.request}: ${e.error}`), r.failed);
}

/** Few workers: every count; many: min / mean / max. */
function spread(counts: readonly number[]): string {
  if (counts.length <= 16) return counts.join(" ");
  const min = Math.min(...counts);
  const max = Math.max(...counts);
  const mean = counts.reduce((a, b) => a + b, 0) / counts.length;
  return `min ${min} / mean ${mean.toFixed(1)} / max ${max}`;
}
