// `bench --compare A.json,B.json`: the headline figures of two result files (`--output-json`, one
// run or `{runs: [...]}`) side by side, e.g. the same workload with and without a fault schedule.
// Figures a file lacks (no audit, an older result) show as "-".
import { KvcrError } from "../../lib/errors.ts";
import { table } from "./format-result.ts";

type Doc = Record<string, unknown>;

/** Reads both files and renders the table. */
export function compareResults(paths: readonly [string, string], readFile: (path: string) => string): string {
  const columns: { name: string; r: Doc }[] = [];
  for (const path of paths) {
    let doc: unknown;
    try {
      doc = JSON.parse(readFile(path));
    } catch (err) {
      throw new KvcrError("COMPARE_UNREADABLE", `--compare: cannot read ${path} as a bench result (${(err as Error).message.split("\n")[0]})`);
    }
    const runs = Array.isArray((doc as Doc | null)?.runs) ? ((doc as Doc).runs as Doc[]) : [doc as Doc];
    if (runs.length === 0 || runs.some((r) => typeof r !== "object" || r === null || typeof r.completed !== "number")) {
      throw new KvcrError("COMPARE_NOT_A_RESULT", `--compare: ${path} is not a bench --output-json result (no "completed" count)`);
    }
    for (const r of runs) columns.push({ name: runs.length > 1 ? `${path} (${String(r.label ?? "run")})` : path, r });
  }
  return table(["", ...columns.map((c) => c.name)], compareRows(columns.map((c) => c.r)));
}

/** One row per headline figure, one cell per result. */
export function compareRows(results: readonly Doc[]): string[][] {
  const rows: [string, (r: Doc) => string][] = [
    ["completed / failed", (r) => `${fmt(r.completed, 0)} / ${fmt(r.failed, 0)}`],
    ["duration (s)", (r) => fmt(r.duration, 2)],
    ["request throughput (req/s)", (r) => fmt(r.request_throughput, 2)],
    ["output throughput (tok/s)", (r) => fmt(r.output_throughput, 1)],
    ["mean TTFT (ms)", (r) => fmt(r.mean_ttft_ms, 2)],
    ["p99 TTFT (ms)", (r) => fmt(r.p99_ttft_ms, 2)],
    ["mean ITL (ms)", (r) => fmt(r.mean_itl_ms, 2)],
    ["p99 E2EL (ms)", (r) => fmt(r.p99_e2el_ms, 2)],
    ["prefix cache reuse ratio", (r) => fmt(r.prefix_cache_reuse_ratio, 4)],
    ["errors", (r) => Object.entries((r.error_breakdown as Record<string, number> | undefined) ?? {}).map(([k, v]) => `${k}:${v}`).join(" ") || "-"],
    ["faults applied", (r) => (Array.isArray(r.faults) ? String((r.faults as Doc[]).filter((f) => f.error === undefined).length) : "-")],
    ["worst index precision", (r) => fmt(worst(r, "precision"), 4)],
    ["worst index recall", (r) => fmt(worst(r, "recall"), 4)],
    ["slowest recovery (s)", (r) => recovery(r)],
    ["regret: best-cache share", (r) => fmt((r.regret as Doc | null | undefined)?.best_cache_share, 4)],
    ["regret: mean / p99 blocks", (r) => (r.regret ? `${fmt((r.regret as Doc).mean_blocks, 2)} / ${fmt((r.regret as Doc).p99_blocks, 2)}` : "-")],
  ];
  return rows.map(([label, f]) => [label, ...results.map(f)]);
}

function fmt(x: unknown, digits: number): string {
  return typeof x === "number" && Number.isFinite(x) ? x.toFixed(digits) : "-";
}

function worst(r: Doc, key: "precision" | "recall"): number | undefined {
  const points = (r.audit as { points?: Doc[]; index_available?: boolean } | undefined)?.points;
  if (!points || points.length === 0) return undefined;
  return Math.min(...points.map((p) => p[key] as number));
}

function recovery(r: Doc): string {
  const list = r.recovery_s as { recovery_s: number | null }[] | undefined;
  if (!list || list.length === 0) return "-";
  if (list.some((x) => x.recovery_s === null)) return "never (some)";
  return Math.max(...list.map((x) => x.recovery_s!)).toFixed(2);
}
