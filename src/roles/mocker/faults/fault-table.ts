// The faults of one mocker process (docs/http-api.md, "Faults"): each POSTed fault with its id,
// when it takes effect (`start`), when it runs out (`for`) or how many batches or requests it may
// still hit (`count`), and which workers and ranks it targets. The layers that act on faults (raw
// publisher, /v1/generate, engine loop, discovery lease) ask it what is in effect for a rank;
// start and end hooks let the instant and process kinds act at the right moment. Clock and timers
// are injected so tests drive them.
import type { Logger } from "../../../lib/logger.ts";
import { FAULT_FAMILIES, type ActiveFault, type FaultKind, type FaultOf, type FaultSpec } from "../../../protocol/faults.ts";

/** Act once when they start, then leave the table. */
const INSTANT_KINDS: ReadonlySet<FaultKind> = new Set(["reset_seq", "clear_all", "exit"]);

export interface FaultClock {
  /** Wall ms (the times faults report and logs show). */
  nowMs(): number;
  setTimer(fn: () => void, ms: number): unknown;
  clearTimer(handle: unknown): void;
}

export const REAL_CLOCK: FaultClock = {
  nowMs: () => Date.now(),
  setTimer: (fn, ms) => setTimeout(fn, Math.min(ms, 2 ** 31 - 1)),
  clearTimer: (h) => clearTimeout(h as ReturnType<typeof setTimeout>),
};

export type FaultEndReason = "expired" | "count reached" | "deleted" | "done";

/** What start and end mean for a kind's own layer (pause the engine, stop the lease, reset seq…). */
export interface FaultHooks {
  started?(fault: HeldFault): void;
  ended?(fault: HeldFault, reason: FaultEndReason): void;
}

/** A fault in the table, with the targets resolved to worker indexes. */
export interface HeldFault {
  readonly view: ActiveFault;
  readonly spec: FaultSpec;
  /** Worker index, undefined = every worker. */
  readonly worker: number | undefined;
  readonly rank: number | undefined;
  active: boolean;
  timer: unknown;
}

export type AddOutcome = { ok: true; fault: ActiveFault } | { ok: false; problem: string };

export class FaultTable {
  private readonly faults = new Map<string, HeldFault>();
  private nextId = 1;
  private readonly hooks: FaultHooks[] = [];
  private closed = false;

  constructor(
    /** Worker ids by index: a target may name a worker either way. */
    private readonly workerIds: readonly string[],
    private readonly dataParallelSize: number,
    private readonly logger: Logger,
    private readonly clock: FaultClock = REAL_CLOCK,
  ) {}

  onChange(hooks: FaultHooks): void {
    this.hooks.push(hooks);
  }

  /** Adds a validated fault: pending until `start` seconds from now, then in effect. */
  add(spec: FaultSpec): AddOutcome {
    const t = spec.target;
    let worker: number | undefined;
    if (typeof t?.worker === "string") {
      worker = this.workerIds.indexOf(t.worker);
      if (worker < 0) return { ok: false, problem: `target.worker: no worker ${JSON.stringify(t.worker)} in this process (workers: ${this.workerIds.slice(0, 8).join(", ")}${this.workerIds.length > 8 ? ", …" : ""})` };
    } else if (typeof t?.worker === "number") {
      if (t.worker >= this.workerIds.length) return { ok: false, problem: `target.worker: no worker ${t.worker} in this process (indexes 0..${this.workerIds.length - 1})` };
      worker = t.worker;
    }
    if (t?.rank !== undefined && t.rank >= this.dataParallelSize) return { ok: false, problem: `target.rank: no rank ${t.rank} (ranks 0..${this.dataParallelSize - 1})` };
    const id = `f-${this.nextId++}`;
    const startsAt = this.clock.nowMs() + spec.start * 1000;
    const view: ActiveFault = { ...spec, id, started_at_ms: Math.round(startsAt) };
    if ("count" in spec && spec.count !== undefined) view.remaining = spec.count;
    const held: HeldFault = { view, spec, worker, rank: t?.rank, active: false, timer: undefined };
    this.faults.set(id, held);
    if (spec.start > 0) {
      this.logger.info(`fault ${id} ${spec.kind} on ${this.describe(held)}: starts at ${new Date(startsAt).toISOString()}`);
      held.timer = this.clock.setTimer(() => this.begin(held), spec.start * 1000);
    } else this.begin(held);
    return { ok: true, fault: view };
  }

  /** Ends a fault early; false when there is none with that id. */
  remove(id: string): boolean {
    const held = this.faults.get(id);
    if (!held) return false;
    this.end(held, "deleted");
    return true;
  }

  removeAll(): number {
    const all = [...this.faults.values()];
    for (const h of all) this.end(h, "deleted");
    return all.length;
  }

  /** Pending and active faults, oldest first. */
  list(): ActiveFault[] {
    return [...this.faults.values()].map((h) => h.view);
  }

  /** The first fault of `kind` in effect for (worker, rank), if any. */
  find<K extends FaultKind>(kind: K, worker: number, rank: number): (HeldFault & { spec: FaultOf<K> }) | undefined {
    for (const h of this.faults.values()) {
      if (h.active && h.spec.kind === kind && this.targets(h, worker, rank)) {
        return h as HeldFault & { spec: FaultOf<K> };
      }
    }
    return undefined;
  }

  /** Whether a fault of `kind` is in effect for (worker, rank). */
  has(kind: FaultKind, worker: number, rank: number): boolean {
    return this.find(kind, worker, rank) !== undefined;
  }

  /** Whether any fault of the family is in effect (or pending): a cheap check for the hot paths. */
  any(kinds: readonly FaultKind[]): boolean {
    for (const h of this.faults.values()) if (h.active && kinds.includes(h.spec.kind)) return true;
    return false;
  }

  /** The fault hit one batch or request: with `count`, one fewer is left (at 0 it ends). */
  hit(held: HeldFault): void {
    if (held.view.remaining === undefined) return;
    held.view.remaining--;
    if (held.view.remaining <= 0) this.end(held, "count reached");
  }

  /** Whether (worker, rank) is one the fault targets. */
  targets(held: HeldFault, worker: number, rank: number): boolean {
    return (held.worker === undefined || held.worker === worker) && (held.rank === undefined || held.rank === rank);
  }

  /** Shutdown: ends every fault (their end hooks run) and starts no pending one. */
  close(): void {
    if (this.closed) return;
    this.removeAll();
    this.closed = true;
  }

  private begin(held: HeldFault): void {
    if (this.closed || !this.faults.has(held.view.id)) return;
    held.active = true;
    held.timer = undefined;
    const spec = held.spec;
    const forS = "for" in spec ? spec.for : undefined;
    held.view.started_at_ms = Math.round(this.clock.nowMs());
    if (forS !== undefined) held.view.ends_at_ms = held.view.started_at_ms + Math.round(forS * 1000);
    const limits = [forS !== undefined ? `for ${forS} s` : "", held.view.remaining !== undefined ? `${held.view.remaining} time(s)` : ""].filter(Boolean).join(", ");
    this.logger.info(`fault ${held.view.id} ${spec.kind} applied at ${new Date(held.view.started_at_ms).toISOString()} on ${this.describe(held)}${limits ? ` (${limits})` : ""}: ${JSON.stringify(params(spec))}`);
    if (forS !== undefined) held.timer = this.clock.setTimer(() => this.end(held, "expired"), forS * 1000);
    for (const h of this.hooks) h.started?.(held);
    if (INSTANT_KINDS.has(spec.kind)) this.end(held, "done");
  }

  private end(held: HeldFault, reason: FaultEndReason): void {
    if (!this.faults.delete(held.view.id)) return;
    if (held.timer !== undefined) this.clock.clearTimer(held.timer);
    const wasActive = held.active;
    held.active = false;
    this.logger.info(`fault ${held.view.id} ${held.spec.kind} ${reason === "done" ? "done" : `ended (${reason})`} at ${new Date(this.clock.nowMs()).toISOString()} on ${this.describe(held)}`);
    if (wasActive) for (const h of this.hooks) h.ended?.(held, reason);
  }

  private describe(held: HeldFault): string {
    if (held.worker === undefined && held.rank === undefined) return "every worker and rank";
    return `${held.worker === undefined ? "every worker" : `worker ${held.worker} (${this.workerIds[held.worker]})`}${held.rank === undefined ? "" : ` rank ${held.rank}`}`;
  }
}

/** The kind's own parameters, for the log line. */
function params(spec: FaultSpec): Record<string, unknown> {
  const { kind: _k, target: _t, start: _s, ...rest } = spec as FaultSpec & Record<string, unknown>;
  return rest;
}

export const EVENT_KINDS: readonly FaultKind[] = FAULT_FAMILIES.event;
export const HTTP_KINDS: readonly FaultKind[] = FAULT_FAMILIES.http;
