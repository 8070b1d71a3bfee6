// The human summary of what a run observed besides its requests, printed under its result block:
// the faults applied, each worker's worst index precision / recall, recovery times, the split by
// LoRA adapter and regret.
import type { ObservedResult } from "./bench-types.ts";
import { table } from "../shared/measure/text-table.ts";

export function formatObserved(r: ObservedResult): string {
  const parts: string[] = [];
  const at = r.label ? ` (${r.label})` : "";
  if (r.faults) {
    const recovery = new Map((r.recovery_s ?? []).map((x) => [x.entry, x.recovery_s]));
    parts.push(
      `Faults${at}:\n` +
        (r.faults.length === 0
          ? "  none applied\n"
          : table(
              ["entry", "applied (s)", "ends (s)", "fault", "target", "recovery (s)"],
              r.faults.map((f) => [String(f.entry), f.applied_s.toFixed(2), f.ends_at_s === null ? "-" : f.ends_at_s.toFixed(2), f.kind, f.target, f.error ? `not applied: ${f.error}` : !r.audit?.index_available ? "-" : recovery.get(f.entry) === null ? "never" : (recovery.get(f.entry)?.toFixed(2) ?? "-")]),
            )),
    );
  }
  if (r.audit) {
    const worst = Object.entries(r.audit.worst);
    parts.push(
      r.audit.index_available
        ? `Index accuracy${at} (${r.audit.points.length} samples every ${r.audit.interval_s} s, device tier), worst per worker:\n` +
            (worst.length === 0 ? "  no samples\n" : table(["worker", "precision", "recall"], worst.map(([w, a]) => [w, a.precision.toFixed(4), a.recall.toFixed(4)])))
        : `Index accuracy${at}: the router serves no GET /v1/index; only the mockers' truth was sampled\n`,
    );
  }
  if (r.by_lora_adapter) {
    parts.push(
      `By LoRA adapter${at}:\n` +
        table(
          ["model", "completed", "failed", "mean TTFT (ms)", "P99 TTFT (ms)", "prefix reuse"],
          r.by_lora_adapter.map((a) => [a.lora_name ?? "(base model)", String(a.completed), String(a.failed), a.mean_ttft_ms.toFixed(2), a.p99_ttft_ms.toFixed(2), a.prefix_cache_reuse_ratio === null ? "-" : `${(a.prefix_cache_reuse_ratio * 100).toFixed(1)} %`]),
        ),
    );
  }
  if (r.regret) parts.push(`Routing regret${at}: ${r.regret.requests} requests, ${(r.regret.best_cache_share * 100).toFixed(1)} % routed to the best cache, mean ${r.regret.mean_blocks.toFixed(2)} / p99 ${r.regret.p99_blocks.toFixed(2)} blocks lost\n`);
  return parts.length > 0 ? `\n${parts.join("\n")}` : "";
}
