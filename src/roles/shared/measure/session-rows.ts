// The session rows of a result block (replay's and bench's): sessions and their time, then one
// row per turn index with its reuse and TTFT, so reuse rising with the turn index shows at a glance.
import type { SessionFigures, TurnIndexFigures } from "../../../core/replay/session-report.ts";
import type { ResultBlock } from "./result-block.ts";

export function sessionRows(block: Pick<ResultBlock, "title" | "row">, s: SessionFigures): void {
  const { title, row } = block;
  title("Sessions", "-");
  row("Sessions (all turns completed)", `${s.sessions} (${s.completed_sessions})`);
  row("Turns per session (mean)", s.mean_turns_per_session.toFixed(2));
  row("Session time mean / p90 / p99 (s)", `${s.mean_session_time_s.toFixed(2)} / ${s.p90_session_time_s.toFixed(2)} / ${s.p99_session_time_s.toFixed(2)}`);
  for (const t of s.per_turn) {
    const reuse = t.prefix_cache_reuse_ratio === null ? "n/a" : t.prefix_cache_reuse_ratio.toFixed(3);
    row(`Turn ${t.turn}: reuse / mean TTFT (ms)`, `${reuse} / ${t.mean_ttft_ms.toFixed(1)}${t.failed > 0 ? ` (${t.failed} failed)` : ""}`);
  }
}

/** Side-by-side rows (one column per run): session time, then reuse and mean TTFT per turn index. */
export function sessionColumns<R extends { sessions?: SessionFigures }>(runs: readonly R[]): [string, (r: R) => string][] {
  const turns = Math.max(0, ...runs.map((r) => r.sessions?.per_turn.length ?? 0));
  if (turns === 0) return [];
  const at = (r: R, k: number): TurnIndexFigures | undefined => r.sessions?.per_turn[k];
  const rows: [string, (r: R) => string][] = [["session time mean (s)", (r) => (r.sessions ? r.sessions.mean_session_time_s.toFixed(2) : "-")]];
  for (let k = 0; k < turns; k++) {
    rows.push([`turn ${k + 1} reuse / mean TTFT (ms)`, (r) => {
      const t = at(r, k);
      return t === undefined ? "-" : `${t.prefix_cache_reuse_ratio === null ? "n/a" : t.prefix_cache_reuse_ratio.toFixed(3)} / ${t.mean_ttft_ms.toFixed(1)}`;
    }]);
  }
  return rows;
}
