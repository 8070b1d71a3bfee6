// A session workload's part in a run: when each turn is due (session-schedule.ts), the prompts
// that grow from a predecessor's output (carried-prompts.ts), and the turns a failure cancels.
// First turns arrive as the arrival spec says (trace timestamps, a rate, or all at 0 under a
// closed loop, whose concurrency then caps the open sessions).
import type { Rng } from "../random/rng.ts";
import { arrivalTimesMs, type ArrivalSpec } from "../workload/arrivals.ts";
import type { WorkloadRequest } from "../workload/workload.ts";
import { CarriedPrompts } from "./carried-prompts.ts";
import { SessionSchedule } from "./session-schedule.ts";

/** True when the workload is turns of sessions (every request carries its session link). */
export function isSessionWorkload(workload: readonly WorkloadRequest[]): boolean {
  return workload.length > 0 && workload[0]!.session !== undefined;
}

/** How many sessions may be open at once under this arrival spec and --max-sessions. */
export function openSessionCap(arrival: ArrivalSpec, maxSessions: number | undefined): number {
  const closed = arrival.kind === "concurrency" ? arrival.concurrency : Infinity;
  return Math.min(closed, maxSessions ?? Infinity);
}

export class SessionRun {
  private readonly schedule: SessionSchedule;
  private readonly prompts: CarriedPrompts;

  constructor(private readonly workload: readonly WorkloadRequest[], arrival: ArrivalSpec, rng: Rng, maxSessions?: number) {
    const roots = workload.filter((r) => r.session!.previous < 0);
    const rootTimes = arrival.kind === "concurrency" ? new Float64Array(roots.length) : arrivalTimesMs(roots, arrival, rng)!;
    const startMs = new Float64Array(workload.length);
    for (let i = 0, k = 0; i < workload.length; i++) if (workload[i]!.session!.previous < 0) startMs[i] = rootTimes[k++]!;
    this.schedule = new SessionSchedule(workload, startMs, openSessionCap(arrival, maxSessions));
    this.prompts = new CarriedPrompts(workload);
  }

  peekMs(): number {
    return this.schedule.peekMs();
  }

  pop(): number {
    return this.schedule.pop();
  }

  get openSessions(): number {
    return this.schedule.openSessions;
  }

  promptLength(i: number): number {
    return this.prompts.inputLength(i);
  }

  writePrompt(i: number, out: Uint32Array): void {
    this.prompts.write(i, out);
  }

  /**
   * Turn i ended at tMs (ok or not), with its prompt and generated tokens when it has them.
   * Returns the turns its failure cancels, each with the reason.
   */
  finished(i: number, tMs: number, ok: boolean, promptAndOutput?: Uint32Array): { index: number; reason: string }[] {
    if (ok && promptAndOutput !== undefined) this.prompts.keep(i, promptAndOutput);
    const cancelled = this.schedule.finished(i, tMs, ok);
    const link = this.workload[i]!.session!;
    return cancelled.map((c) => {
      this.prompts.forget(c);
      return { index: c, reason: `not sent: turn ${link.turn} of its session (request ${i}) failed` };
    });
  }

  /** Tokens kept for growing prompts right now. */
  get heldTokens(): number {
    return this.prompts.held;
  }
}
