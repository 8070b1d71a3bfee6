// A request that stalls on a worker asks the worker process's /health, with a short deadline, which
// kind of stall it was: no answer (a hung or stopped process) takes the worker out of routing at
// once; a 200 (the process answers, the request is stuck) counts toward --worker-eject-after as
// any failure does. The request itself retries or migrates without waiting for the answer (it
// never goes back to a worker it failed on). Stalls on one worker while its probe is out share it.
import { healthUrlOf, type ProbeWorker } from "./health-probe.ts";
import type { RoutingState } from "./routing-state.ts";
import type { WorkerEntry } from "./route-plan.ts";

/** The probe's deadline: a process that answers at all answers /health well within it. */
export const STALL_PROBE_TIMEOUT_MS = 1_000;

/** Probes sent and how they ended (for /metrics). */
export interface StallProbeCounts {
  answered: number;
  failed: number;
}

export class StallProbe {
  private readonly pending = new Map<string, Promise<boolean>>();

  constructor(
    private readonly state: RoutingState,
    private readonly probe: ProbeWorker,
    readonly counts: StallProbeCounts,
    /** A worker left routing on a failed probe (the probe that brings it back starts). */
    private readonly onEject: () => void = () => {},
  ) {}

  /** A request stalled on `worker`: resolves once its failure is reported, the way the probe says. */
  async stalled(worker: WorkerEntry): Promise<void> {
    const answered = await this.ask(worker);
    if (this.state.reportFailure(worker.id, answered ? false : "stalled")) this.onEject();
  }

  /** One probe per worker at a time; true when its /health answered 200 within the deadline. */
  private ask(worker: WorkerEntry): Promise<boolean> {
    let p = this.pending.get(worker.id);
    if (p !== undefined) return p;
    const url = healthUrlOf(worker.record.request_url);
    p = this.probe(url, STALL_PROBE_TIMEOUT_MS)
      .catch(() => false)
      .then((ok) => {
        this.pending.delete(worker.id);
        this.counts[ok ? "answered" : "failed"]++;
        return ok;
      });
    this.pending.set(worker.id, p);
    return p;
  }
}
