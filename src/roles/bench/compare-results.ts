// `bench --compare A.json,B.json`: the verdict of two result files (`--output-json`, one run or
// `{runs: [...]}`; or aiperf's export, shared/measure/aiperf-read.ts; each file a side, or one side per label when a file holds several, its runs of
// one label its rounds), then their headline figures side by side, e.g. the same workload with and
// without a fault schedule. The verdict resamples requests, so it needs the per-request arrays of
// --save-detailed and says so when a file lacks them. Figures a file lacks show as "-". The same
// verdict (or the reason there is none) as JSON for --output-json.
import type { SideSamples } from "../../core/stats/run-samples.ts";
import { compareSides, type Verdict } from "../../core/stats/verdict.ts";
import { KvcrError } from "../../lib/errors.ts";
import { unresolvedCell } from "./client-resolution.ts";
import { formatVerdict, verdictNotes } from "../shared/measure/verdict-text.ts";
import { table } from "../shared/measure/text-table.ts";
import { detailedRound, timingOfDetailed } from "./detailed-samples.ts";
import { unresolvedVerdictFigure } from "./verdict-of-runs.ts";
import { readRunDocument } from "../shared/measure/run-document.ts";

type Doc = Record<string, unknown>;

/** Seeds the verdict's resampling: the same two files always give the same verdict. */
const COMPARE_SEED = 0;

/** What --compare prints, and what --output-json writes: the verdict's keys as a bench comparison writes them. */
export interface CompareOutcome {
  text: string;
  /** The verdict itself, for the report page. */
  verdict?: Verdict;
  json: {
    compare: string[];
    /** The columns of the table: a file, or a file's run. */
    columns: string[];
    /** null when there is none: then `no_verdict` says why. */
    verdict: Verdict["entries"] | null;
    verdict_notes?: string[];
    no_verdict?: string;
  };
}

/** Reads both files; the verdict (or why there is none), then the table. */
export function compareResults(paths: readonly [string, string], readFile: (path: string) => string): CompareOutcome {
  const columns: { name: string; r: Doc; path: string }[] = [];
  for (const path of paths) {
    const doc = readRunDocument(path, readFile, "--compare");
    const runs = Array.isArray((doc as Doc | null)?.runs) ? ((doc as Doc).runs as Doc[]) : [doc as Doc];
    if (runs.length === 0 || runs.some((r) => typeof r !== "object" || r === null || typeof r.completed !== "number")) {
      throw new KvcrError("COMPARE_NOT_A_RESULT", `--compare: ${path} is not a bench --output-json result (no "completed" count)`);
    }
    for (const r of runs) columns.push({ name: runs.length > 1 ? `${path} (${String(r.label ?? "run")}${typeof r.round === "number" ? ` round ${r.round}` : ""})` : path, r, path });
  }
  const v = compareVerdict(columns);
  const names = columns.map((c) => c.name);
  const head = "verdict" in v ? formatVerdict(v.verdict) : `No verdict: ${v.none}.\n\n`;
  const json: CompareOutcome["json"] =
    "verdict" in v
      ? { compare: [...paths], columns: names, verdict: v.verdict.entries, verdict_notes: verdictNotes(v.verdict) }
      : { compare: [...paths], columns: names, verdict: null, no_verdict: v.none };
  return { text: head + table(["", ...names], compareRows(columns.map((c) => c.r))), json, ...("verdict" in v ? { verdict: v.verdict } : {}) };
}

/** The verdict of the files' runs (sides: a file, or a file's label; rounds: that side's runs), or why there is none. */
function compareVerdict(columns: readonly { r: Doc; path: string }[]): { verdict: Verdict } | { none: string } {
  const groups = new Map<string, { path: string; label: string; runs: Doc[] }>();
  for (const c of columns) {
    const label = String(c.r.label ?? "run");
    const key = JSON.stringify([c.path, label]);
    groups.set(key, { path: c.path, label, runs: [...(groups.get(key)?.runs ?? []), c.r] });
  }
  const labelsPerFile = new Map<string, number>();
  for (const g of groups.values()) labelsPerFile.set(g.path, (labelsPerFile.get(g.path) ?? 0) + 1);
  const sides: SideSamples[] = [];
  const missing: string[] = [];
  for (const g of groups.values()) {
    const rounds = g.runs.map((r) => detailedRound(r, g.path));
    if (rounds.some((r) => r === undefined)) {
      if (!missing.includes(g.path)) missing.push(g.path);
      continue;
    }
    sides.push({ label: labelsPerFile.get(g.path)! > 1 ? `${g.path} (${g.label})` : g.path, rounds: rounds.map((r) => r!) });
  }
  if (missing.length > 0) return { none: `${missing.join(" and ")} ${missing.length > 1 ? "have" : "has"} no per-request arrays (ttfts, itls, output_lens, errors); a verdict resamples requests, so run bench with --save-detailed to write them` };
  if (sides.length < 2) return { none: "both files give one side (the same file, or runs of one label): there is nothing to compare it with" };
  const timing = [...groups.values()].map((g) => timingOfDetailed(g.runs));
  return { verdict: compareSides(sides, { seed: COMPARE_SEED, unresolved: (i, metric, value) => unresolvedVerdictFigure(metric, value, timing[i]!) }) };
}

/** One row per headline figure, one cell per result. */
export function compareRows(results: readonly Doc[]): string[][] {
  const rows: [string, (r: Doc) => string][] = [
    ["completed / failed", (r) => `${fmt(r.completed, 0)} / ${fmt(r.failed, 0)}`],
    ["duration (s)", (r) => fmt(r.duration, 2)],
    ["request throughput (req/s)", (r) => fmt(r.request_throughput, 2)],
    ["output throughput (tok/s)", (r) => fmt(r.output_throughput, 1)],
    ["mean TTFT (ms)", latency("mean_ttft_ms")],
    ["p99 TTFT (ms)", latency("p99_ttft_ms")],
    ["mean ITL (ms)", latency("mean_itl_ms")],
    ["p99 E2EL (ms)", latency("p99_e2el_ms")],
    ["client lag p99 (ms)", (r) => fmt((r.client_event_loop_lag as Doc | undefined)?.p99_ms, 1)],
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

/** A latency as the file has it, unless the file says its client could not resolve it. */
function latency(key: string): (r: Doc) => string {
  return (r) => {
    const why = (r.unresolved_figures as Record<string, string> | undefined)?.[key];
    return typeof why === "string" ? unresolvedCell(why) : fmt(r[key], 2);
  };
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
