// `kvcr-mock bench` as a function: load the workload (shared with replay), drive each run (one
// URL; or one stack per router mode; or one concurrency per sweep point; each --rounds times,
// rounds outermost so drift in the machine spreads over every side), then — for a comparison — the
// verdict first, the result table(s), the JSON and the HTML report; with --with-replay replay's
// prediction of the same run beside the measurement. One run is measure-run.ts; --compare reads
// two earlier results instead (compare-results.ts).
import { assignAdapters } from "./lora-assignment.ts";
import type { ReplayReport } from "../../core/replay/report.ts";
import { KvcrError } from "../../lib/errors.ts";
import { simulateStack } from "../shared/measure/simulated-stack.ts";
import { formatPrediction, formatResult, formatSideBySide } from "./format-result.ts";
import { renderHtml } from "./html-report.ts";
import { reportHeader } from "./report-header.ts";
import { resultJson } from "./result-json.ts";
import { saveResult } from "./save-result.ts";
import { compareResults } from "./compare-results.ts";
import type { ArrivalSpec } from "../../core/workload/arrivals.ts";
import { arrivalSpecOf, loadWorkload } from "../shared/measure/workload.ts";
import { verdictHtml } from "./format-verdict.ts";
import { escapeHtml } from "./report-header.ts";
import { formatVerdict, verdictNotes } from "../shared/measure/verdict-text.ts";
import { measureRun } from "./measure-run.ts";
import { join } from "node:path";
import { VERSION } from "../../lib/version.ts";
import { AIPERF_RECORDS, AIPERF_SUMMARY, aiperfFromRun } from "./aiperf-export.ts";
import { poolRounds, sidesOf } from "./pool-rounds.ts";
import { verdictOfSides } from "./verdict-of-runs.ts";
import { formatObserved } from "./format-observed.ts";
import { predictionFigures } from "./with-replay.ts";
import type { BenchDeps, BenchOptions, BenchOutcome, MeasuredRun } from "./bench-types.ts";

/** Synthetic requests generated for a --duration run without --requests (sending stops at the deadline). */
export const DURATION_SYNTHETIC_REQUESTS = 100_000;

export async function runBench(opts: BenchOptions, deps: BenchDeps): Promise<BenchOutcome> {
  for (const [flag, path] of [["--output-json", opts.outputJson], ["--report", opts.report]] as const) {
    if (path === undefined || path === "-") continue;
    try {
      deps.checkWritable(path);
    } catch (err) {
      throw new KvcrError("OUTPUT_UNWRITABLE", `cannot write ${flag} ${path}: ${(err as Error).message}; ${opts.compare ? "nothing was compared" : "nothing was sent"}`);
    }
  }
  if (opts.compare) {
    const compared = compareResults(opts.compare, deps.readFile);
    const jsonText = JSON.stringify(compared.json, null, 2) + "\n";
    deps.stdout.write(opts.outputJson === "-" ? jsonText : compared.text);
    if (opts.outputJson !== undefined && opts.outputJson !== "-") write(deps, "--output-json", opts.outputJson, jsonText);
    if (opts.report !== undefined) write(deps, "--report", opts.report, comparePage(opts.compare, compared));
    return { results: [], compared: true };
  }
  const workloadOpts = opts.durationS !== undefined && opts.workload.trace === undefined && opts.workload.requests === undefined ? { ...opts.workload, requests: DURATION_SYNTHETIC_REQUESTS } : opts.workload;
  const points: { arrival: ArrivalSpec; label?: string }[] = opts.sweepConcurrency
    ? opts.sweepConcurrency.map((c) => ({ arrival: { kind: "concurrency", concurrency: c }, label: `c=${c}` }))
    : [{ arrival: arrivalSpecOf(opts) }];
  const rounds = opts.rounds ?? 1;
  if (rounds > 1 && opts.targets.some((t) => !("fresh" in t))) deps.logger.warn(`--rounds ${rounds} on running stacks: rounds after the first start on the cache the earlier ones left, so rounds differ by more than chance; fresh stacks (no --url-per-mode) avoid it`);
  const runs: MeasuredRun[] = [];
  const models = new Map<string, string>();
  for (let round = 1; round <= rounds && deps.stop?.aborted !== true; round++) {
    // Each round draws its own requests (and arrivals), the same for every side: rounds are independent samples.
    const workload = assignAdapters(loadWorkload({ ...workloadOpts, seed: opts.workload.seed + round - 1 }, deps, "nothing was sent"), opts.lora, opts.workload.seed + round - 1);
    // Sides alternate from round to round, so neither always runs first on a machine that warms or tires.
    for (const target of round % 2 === 0 ? [...opts.targets].reverse() : opts.targets) {
      for (const point of points) {
        if (deps.stop?.aborted) break;
        runs.push(await measureRun(target, point, round, workload, opts, deps, models));
      }
    }
  }
  const results = runs.map((r) => r.result);
  // A comparison's tables and charts show each side over all its rounds; its verdict weighs them.
  const sides = sidesOf(runs);
  const shown = sides.map((side) => poolRounds(side, opts.percentiles));
  const verdict = sides.length > 1 ? verdictOfSides(sides, opts.workload.seed) : undefined;

  let replay: ReplayReport | undefined;
  if (opts.withReplay) {
    if (opts.warmupRequests > 0) deps.logger.warn("--with-replay: the simulation has no warm-up; its cache starts cold while the live stack was warmed by --warmup-requests");
    const workload = assignAdapters(loadWorkload(workloadOpts, deps, "nothing was sent"), opts.lora, opts.workload.seed);
    replay = simulateStack(workload, opts.withReplay, { arrival: points[0]!.arrival, seed: opts.workload.seed, maxSessions: opts.maxSessions, startedMs: deps.now() }, deps);
  }

  const shaped = runs.map((r) => resultJson(r.result, r.records, { percentileMetrics: opts.percentileMetrics, metadata: opts.metadata, detailed: opts.saveDetailed }));
  const comparison = verdict ? { rounds, verdict: verdict.entries, verdict_notes: verdictNotes(verdict) } : {};
  const doc = shaped.length === 1 && !replay ? shaped[0] : { ...comparison, runs: shaped, ...(replay ? { replay } : {}) };
  const jsonText = JSON.stringify(doc, null, 2) + "\n";
  if (opts.outputJson === "-") deps.stdout.write(jsonText);
  else {
    if (verdict) deps.stdout.write(formatVerdict(verdict));
    const pooled = shown.map((r) => r.result);
    if (pooled.length === 1) deps.stdout.write(formatResult(pooled[0]!, opts.percentiles));
    else if (pooled.length > 1) deps.stdout.write(formatSideBySide(pooled, opts.percentiles, rounds > 1 ? `each side over its ${rounds} rounds` : undefined));
    for (const r of results) deps.stdout.write(formatObserved(r));
    if (replay) deps.stdout.write(`\nReplay prediction vs live measurement (${opts.withReplay!.numWorkers} simulated worker(s), router ${opts.withReplay!.routerMode}):\n${formatPrediction(predictionFigures(replay, results[0]!))}`);
  }
  if (opts.outputJson !== undefined && opts.outputJson !== "-") write(deps, "--output-json", opts.outputJson, jsonText);
  if (opts.saveResult && results.length > 0) {
    const first = results[0]!;
    const name = { label: opts.label, backend: first.backend, requestRate: first.request_rate, maxConcurrency: opts.maxConcurrency, model: first.model_id };
    const path = saveResult(opts.saveResult, doc, name, { readFile: deps.readFile, write: (p, t) => write(deps, "--save-result", p, t) });
    deps.logger.info(`result saved to ${path}`);
  }
  if (opts.exportAiperf !== undefined) writeAiperfExports(opts.exportAiperf, runs, deps);
  if (opts.report !== undefined && shown.length > 0) {
    write(deps, "--report", opts.report, renderHtml(shown, { title: `kvcr-mock bench: ${shown.map((r) => r.label).join(" vs ")}`, percentiles: opts.percentiles, header: reportHeader(opts), verdict: verdict ? verdictHtml(verdict) : undefined, rounds }));
    deps.logger.info(`report written to ${opts.report}`);
  }
  return { results, ...(verdict ? { verdict } : {}), replay, ...(deps.stop?.aborted ? { stopped: true } : {}) };
}

/**
 * 130 when a stop signal cut the run short (the shell's code for SIGINT; the partial result was
 * still written), 1 when a run completed no request (nothing was measured), else 0; partial
 * failures are results.
 */
export function benchExitCode(outcome: BenchOutcome): 0 | 1 | 130 {
  if (outcome.compared) return 0;
  if (outcome.stopped) return 130;
  return outcome.results.length === 0 || outcome.results.some((r) => r.completed === 0) ? 1 : 0;
}

/** --compare's report: the verdict (or why there is none) and the side-by-side table, on one page. */
function comparePage(paths: readonly string[], c: ReturnType<typeof compareResults>): string {
  const title = `kvcr-mock bench --compare: ${paths.join(" vs ")}`;
  const verdict = c.verdict ? verdictHtml(c.verdict) : `<section id="verdict"><h2>Verdict</h2><p>No verdict: ${escapeHtml(c.json.no_verdict ?? "")}.</p></section>`;
  const tableText = c.text.slice(c.text.indexOf("\n\n") + 2);
  return `<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)}</title>
<style>body{font:14px system-ui,sans-serif;margin:24px;color:#222} pre{background:#f6f6f6;padding:12px;overflow:auto} #verdict table{border-collapse:collapse} #verdict td,#verdict th{border:1px solid #ddd;padding:2px 8px}</style></head>
<body><h1>${escapeHtml(title)}</h1>
${verdict}
<pre id="summary">${escapeHtml(tableText)}</pre>
</body></html>
`;
}

/** Each run in aiperf's export files: into DIR for one run, DIR/<label>[-round-N] for several. */
function writeAiperfExports(dir: string, runs: readonly MeasuredRun[], deps: BenchDeps): void {
  const wallOffsetMs = Date.now() - deps.now();
  const many = runs.length > 1;
  for (const r of runs) {
    const sub = many ? join(dir, `${r.label}${r.round > 0 && runs.some((o) => o !== r && o.label === r.label) ? `-round-${r.round}` : ""}`) : dir;
    const files = aiperfFromRun(r.result, r.records, { wallOffsetMs, version: `kvcr-mock ${VERSION}`, benchmarkId: `${r.label}-${r.round}` });
    write(deps, "--export-aiperf", join(sub, AIPERF_SUMMARY), JSON.stringify(files.summary, null, 2) + "\n");
    write(deps, "--export-aiperf", join(sub, AIPERF_RECORDS), files.records);
  }
  deps.logger.info(`aiperf export files written to ${dir}`);
}

function write(deps: BenchDeps, flag: string, path: string, text: string): void {
  try {
    deps.writeFile(path, text);
  } catch (err) {
    throw new KvcrError("OUTPUT_FAILED", `cannot write ${flag} ${path}: ${(err as Error).message}`);
  }
}
