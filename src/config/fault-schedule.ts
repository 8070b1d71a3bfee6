// Fault schedules (`up --faults FILE`, `bench --faults FILE`): a YAML or JSON list of
// `{at, target, fault}` entries, `at` in seconds from the start ("30s", "500ms", "2m" or a number),
// `target` "worker W [rank R]" | "agent" | "frontend", `fault` a mocker fault body
// (protocol/faults.ts) or `kill` / `restart`. Parsed and checked here, before anything starts; every
// problem names the entry and the field. Applying a schedule is roles/shared/stack/fault-runner.ts.
import * as v from "valibot";
import { parse as parseYaml } from "yaml";
import { ConfigError } from "../lib/errors.ts";
import { checkFault, type FaultSpec } from "../protocol/faults.ts";

/** Whom an entry acts on. `worker` is a global worker index (integer) or a worker id. */
export type ScheduleTarget = { role: "worker"; worker: number | string; rank?: number } | { role: "agent" } | { role: "frontend" };

export type ScheduleAction = { kind: "fault"; fault: FaultSpec } | { kind: "kill" } | { kind: "restart" };

export interface ScheduleEntry {
  /** Position in the file, from 1 (as messages name it). */
  entry: number;
  /** Seconds from the start of the run (bench) or from ready (up). */
  atS: number;
  /** The target as written, for logs and results. */
  targetText: string;
  target: ScheduleTarget;
  action: ScheduleAction;
}

const EntrySchema = v.strictObject({
  at: v.union([v.pipe(v.number(), v.minValue(0)), v.string()], 'expected seconds ≥ 0 or a duration such as "30s", "500ms", "2m"'),
  target: v.pipe(v.string("expected a string: \"worker W [rank R]\", \"agent\" or \"frontend\""), v.nonEmpty("must not be empty")),
  // A bare kind (`clear_all`) is short for `{kind: clear_all}`, for kinds that need no field.
  fault: v.union([v.string(), v.record(v.string(), v.unknown())], "expected a fault kind, a fault object with a kind, or kill, or restart"),
});

/** "30s" / "1.5s" / "500ms" / "2m" / 12 → seconds; undefined when unreadable. */
export function parseAt(at: number | string): number | undefined {
  if (typeof at === "number") return Number.isFinite(at) && at >= 0 ? at : undefined;
  const m = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m)?\s*$/.exec(at);
  if (!m) return undefined;
  const n = Number(m[1]);
  return m[2] === "ms" ? n / 1000 : m[2] === "m" ? n * 60 : n;
}

/** "worker 3", "worker kvcr-slot-2 rank 1", "agent", "frontend" → target; undefined when unreadable. */
export function parseTarget(text: string): ScheduleTarget | undefined {
  const t = text.trim();
  if (t === "agent" || t === "frontend") return { role: t };
  const m = /^worker\s+(\S+)(?:\s+rank\s+(\d+))?$/.exec(t);
  if (!m) return undefined;
  const worker = /^\d+$/.test(m[1]!) ? Number(m[1]) : m[1]!;
  return m[2] !== undefined ? { role: "worker", worker, rank: Number(m[2]) } : { role: "worker", worker };
}

/** Checks a parsed document; returns the entries sorted by time (ties keep file order) and every problem found. */
export function checkSchedule(doc: unknown, where: string): { entries: ScheduleEntry[]; problems: string[] } {
  if (!Array.isArray(doc)) return { entries: [], problems: [`${where}: expected a list of {at, target, fault} entries, got ${doc === null ? "nothing" : typeof doc}`] };
  const entries: ScheduleEntry[] = [];
  const problems: string[] = [];
  doc.forEach((raw, i) => {
    const at = `${where}: entry ${i + 1}`;
    const r = v.safeParse(EntrySchema, raw);
    if (!r.success) {
      const issue = r.issues[0];
      const field = issue.path?.map((p) => String(p.key)).join(".") || "(entry)";
      problems.push(`${at}: ${field}: ${/Invalid key/.test(issue.message) ? "not a field of a schedule entry (at, target, fault)" : issue.message}`);
      return;
    }
    const atS = parseAt(r.output.at);
    if (atS === undefined) problems.push(`${at}: at: got ${JSON.stringify(r.output.at)}, expected seconds ≥ 0 or a duration such as "30s", "500ms", "2m"`);
    const target = parseTarget(r.output.target);
    if (!target) problems.push(`${at}: target: got ${JSON.stringify(r.output.target)}, expected "worker W [rank R]" (W a worker index or id), "agent" or "frontend"`);
    let action: ScheduleAction | undefined;
    const f = r.output.fault;
    if (f === "kill" || f === "restart") action = { kind: f };
    else if (typeof f === "string") {
      const c = checkFault({ kind: f });
      if (c.ok) action = { kind: "fault", fault: c.value };
      else problems.push(`${at}: fault.${c.problem.replace(/^\(record\): /, "")}`);
    } else if ("target" in f) problems.push(`${at}: fault.target: give the target in the entry's target ("worker W rank R"), not in the fault`);
    else {
      const c = checkFault(f);
      if (c.ok) action = { kind: "fault", fault: c.value };
      else problems.push(`${at}: fault.${c.problem.replace(/^\(record\): /, "")}`);
    }
    if (action?.kind === "fault" && target && target.role !== "worker") problems.push(`${at}: fault: only mockers take faults; the ${target.role} takes kill or restart`);
    if (atS !== undefined && target && action) entries.push({ entry: i + 1, atS, targetText: r.output.target.trim(), target, action });
  });
  entries.sort((a, b) => a.atS - b.atS || a.entry - b.entry);
  return { entries, problems };
}

/** Parses a schedule file's text (JSON for *.json, else YAML); throws ConfigError listing every problem. */
export function parseSchedule(text: string, path: string, flag = "--faults"): ScheduleEntry[] {
  const where = `${flag} ${path}`;
  let doc: unknown;
  const json = /\.json$/i.test(path);
  try {
    doc = json ? JSON.parse(text) : parseYaml(text);
  } catch (err) {
    throw new ConfigError([`${where}: not valid ${json ? "JSON" : "YAML"}: ${(err as Error).message.split("\n")[0]}`]);
  }
  const { entries, problems } = checkSchedule(doc, where);
  if (problems.length > 0) throw new ConfigError(problems);
  return entries;
}

/** Reads and parses a schedule file; an unreadable file is a ConfigError naming it. */
export function loadSchedule(path: string, readFile: (path: string) => string, flag = "--faults"): ScheduleEntry[] {
  let text: string;
  try {
    text = readFile(path);
  } catch (err) {
    throw new ConfigError([`${flag} ${path}: cannot read it: ${(err as Error).message}`]);
  }
  return parseSchedule(text, path, flag);
}

/** When a fault stops acting, seconds after it was applied: start + for; undefined when it has no known end (count, or open-ended). */
export function faultDurationS(action: ScheduleAction): number | undefined {
  if (action.kind !== "fault") return 0;
  const f = action.fault as FaultSpec & { start?: number; for?: number; count?: number };
  if (f.for !== undefined) return (f.start ?? 0) + f.for;
  return INSTANT_KINDS.has(f.kind) ? (f.start ?? 0) : undefined;
}

/** Kinds that act once (no `for` or `count`). */
const INSTANT_KINDS: ReadonlySet<string> = new Set(["reset_seq", "clear_all", "exit"]);
