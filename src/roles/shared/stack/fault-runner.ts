// Applies a fault schedule (config/fault-schedule.ts) as time passes: a fault is POSTed to the
// target worker's mocker (`/admin/faults`, aimed at that worker id and rank); kill and restart go to
// the hooks of whoever started the stack (up's supervisor; bench's own fresh stacks), and are
// recorded as skipped otherwise. Every entry is logged with its wall time and kept as an
// AppliedFault (bench's result `faults`). Used by bench and up.
import { faultDurationS, type ScheduleEntry, type ScheduleTarget } from "../../../config/fault-schedule.ts";
import type { Logger } from "../../../lib/logger.ts";
import { stackWorkers, type StackWorker } from "./stack-truth.ts";

export interface AppliedFault {
  /** The entry's position in the schedule file (from 1). */
  entry: number;
  /** When it was due and when it was applied, seconds from the start. */
  at_s: number;
  applied_s: number;
  /** Wall time it was applied (ISO 8601). */
  applied_at: string;
  target: string;
  /** The fault kind, or kill / restart. */
  kind: string;
  /** The mocker's fault id (null for kill / restart and when applying failed). */
  id: string | null;
  /** When it stops acting, seconds from the start: start + for; for a restart, when the process is ready again; null when it has no known end (count). */
  ends_at_s: number | null;
  /** The worker it hit and the mocker that took it. */
  worker_id?: string;
  mocker?: string;
  /** Why it was not applied. */
  error?: string;
}

/** Process control, offered by whoever started the stack. `mocker` is the target worker's mocker base URL. */
export interface ProcessControl {
  kill(target: ScheduleTarget, mocker: string | undefined): Promise<string>;
  restart(target: ScheduleTarget, mocker: string | undefined): Promise<string>;
}

export interface FaultRunnerDeps {
  logger: Logger;
  /** Monotonic ms (the start and every `at` are on this clock). */
  now(): number;
  /** Wall ms, for applied_at. */
  wallNow(): number;
  /** The stack's mocker base URLs in stack order (worker W = the W-th worker over them). */
  mockers(): Promise<string[]>;
  control?: ProcessControl;
}

export interface ScheduleRun {
  readonly applied: AppliedFault[];
  /** Resolves once every entry due before stop() was applied. */
  readonly done: Promise<void>;
  /** Stops applying entries (those not yet due are dropped and logged). */
  stop(): Promise<void>;
  /** DELETEs the mocker faults this run posted that may still be active (the stack is left as found). */
  withdraw(): Promise<void>;
}

/** Starts applying `entries`, their `at` counted from `startMs` (deps.now clock). */
export function runSchedule(entries: readonly ScheduleEntry[], startMs: number, deps: FaultRunnerDeps): ScheduleRun {
  const applied: AppliedFault[] = [];
  const stopper = new AbortController();
  const stopped = new Promise<void>((resolve) => stopper.signal.addEventListener("abort", () => resolve(), { once: true }));
  // The stack's workers as last seen whole: a worker index still names the same worker while one
  // of the mockers is down (killed, restarting) and cannot be asked.
  const known: { workers?: StackWorker[] } = {};
  // Each due entry starts at its time, whatever the ones before it are still doing (a restart waits for readiness).
  const running: Promise<void>[] = [];
  const done = (async () => {
    for (const [i, e] of entries.entries()) {
      const wait = startMs + e.atS * 1000 - deps.now();
      if (wait > 0) {
        let timer: ReturnType<typeof setTimeout> | undefined;
        await Promise.race([new Promise<void>((r) => (timer = setTimeout(r, wait))), stopped]);
        clearTimeout(timer);
      }
      if (stopper.signal.aborted) {
        const left = entries.length - i;
        deps.logger.warn(`fault schedule: ${left} entr${left === 1 ? "y" : "ies"} not applied (the run ended first), from entry ${e.entry} at ${e.atS} s`);
        break;
      }
      running.push(applyEntry(e, startMs, deps, known).then((rec) => void applied.push(rec)));
    }
    await Promise.all(running);
    applied.sort((a, b) => a.entry - b.entry);
  })();
  return {
    applied,
    done,
    stop: async () => {
      stopper.abort();
      await done;
    },
    withdraw: () => withdraw(applied, deps.logger),
  };
}

async function applyEntry(e: ScheduleEntry, startMs: number, deps: FaultRunnerDeps, known: { workers?: StackWorker[] }): Promise<AppliedFault> {
  let appliedS = (deps.now() - startMs) / 1000;
  const kind = e.action.kind === "fault" ? e.action.fault.kind : e.action.kind;
  const rec: AppliedFault = { entry: e.entry, at_s: e.atS, applied_s: round(appliedS), applied_at: new Date(deps.wallNow()).toISOString(), target: e.targetText, kind, id: null, ends_at_s: null };
  // Stamped when the fault takes effect (the mocker's answer, the kill), not before the lookup that precedes it.
  const stamp = () => {
    appliedS = (deps.now() - startMs) / 1000;
    rec.applied_s = round(appliedS);
    rec.applied_at = new Date(deps.wallNow()).toISOString();
  };
  try {
    const worker = e.target.role === "worker" ? await findWorker(e.target.worker, deps, known) : undefined;
    if (worker) [rec.worker_id, rec.mocker] = [worker.workerId, worker.mocker];
    if (e.action.kind === "fault") {
      const rank = e.target.role === "worker" ? e.target.rank : undefined;
      const body = { ...e.action.fault, target: { worker: worker!.workerId, ...(rank !== undefined ? { rank } : {}) } };
      rec.id = await postFault(worker!.mocker, body);
      stamp();
    } else {
      if (!deps.control) throw new Error(`${e.action.kind} needs a stack this command started (up, or bench's own stack); skipped`);
      const what = await deps.control[e.action.kind](e.target, worker?.mocker);
      if (e.action.kind === "kill") stamp(); // a restart is stamped at its start: it lasts until ready
      deps.logger.info(`fault schedule: entry ${e.entry}: ${e.action.kind} ${what}`);
    }
    const d = faultDurationS(e.action);
    // A restart lasts until the process is ready again (the control call returns then).
    rec.ends_at_s = e.action.kind === "restart" ? round((deps.now() - startMs) / 1000) : d === undefined ? null : round(appliedS + d);
    deps.logger.info(`fault schedule: entry ${e.entry} applied at ${rec.applied_at} (${rec.applied_s.toFixed(3)} s): ${kind} on ${e.targetText}${worker ? ` (worker ${worker.workerId} at ${worker.mocker})` : ""}${rec.id ? `, fault id ${rec.id}` : ""}`);
  } catch (err) {
    rec.error = (err as Error).message;
    deps.logger.error(`fault schedule: entry ${e.entry} (${kind} on ${e.targetText} at ${e.atS} s) not applied: ${rec.error}`);
  }
  return rec;
}

/** Worker W: an index over the stack's workers (mockers in order, each one's workers in its order), or a worker id. */
async function findWorker(w: number | string, deps: FaultRunnerDeps, known: { workers?: StackWorker[] }): Promise<StackWorker> {
  const mockers = await deps.mockers();
  if (mockers.length === 0) throw new Error("no mockers known (give --mocker-urls, or a router serving GET /v1/index)");
  const seen = await stackWorkers(mockers);
  if (seen.complete) known.workers = seen.workers;
  const workers = seen.complete ? seen.workers : (known.workers ?? seen.workers);
  const found = typeof w === "number" ? workers[w] : workers.find((x) => x.workerId === w);
  if (!found) throw new Error(`no worker ${w} in this stack (it has ${workers.length}: ${workers.map((x) => x.workerId).join(", ")})`);
  return found;
}

async function postFault(mocker: string, body: unknown): Promise<string | null> {
  const url = `${mocker}/admin/faults`;
  const res = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body), signal: AbortSignal.timeout(5_000) });
  const text = await res.text();
  if (res.status !== 200 && res.status !== 201) throw new Error(`POST ${url}: HTTP ${res.status} ${text.slice(0, 200)}`);
  const doc = JSON.parse(text) as { id?: unknown; fault?: { id?: unknown } };
  const id = doc.id ?? doc.fault?.id;
  return typeof id === "string" || typeof id === "number" ? String(id) : null;
}

async function withdraw(applied: readonly AppliedFault[], logger: Logger): Promise<void> {
  await Promise.all(
    applied
      .filter((a) => a.id !== null && a.mocker !== undefined)
      .map(async (a) => {
        const url = `${a.mocker}/admin/faults/${encodeURIComponent(a.id!)}`;
        const res = await fetch(url, { method: "DELETE", signal: AbortSignal.timeout(5_000) }).catch(() => undefined);
        await res?.body?.cancel().catch(() => {});
        // 404: it already ran out. No answer: the mocker is gone (killed) and its faults with it.
        if (res && res.status !== 200 && res.status !== 204 && res.status !== 404) logger.warn(`fault schedule: DELETE ${url}: HTTP ${res.status}`);
      }),
  );
}

function round(x: number): number {
  return Math.round(x * 1000) / 1000;
}
