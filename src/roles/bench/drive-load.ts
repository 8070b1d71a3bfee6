// Drives a workload at a server: warm-up requests first (not counted), then arrivals as the spec
// says — a closed loop of N in flight, or a schedule (Poisson or trace timestamps, from the same
// core code replay uses) — until the workload or --duration runs out; in-flight requests always
// finish. The clock, sleep and the sender are injected, so this is tested without a server.
import { createRng } from "../../core/random/rng.ts";
import { arrivalTimesMs, type ArrivalSpec } from "../../core/workload/arrivals.ts";
import type { WorkloadRequest } from "../../core/workload/workload.ts";
import type { RequestRecord } from "./send-request.ts";

export interface LoadPlan {
  workload: readonly WorkloadRequest[];
  arrival: ArrivalSpec;
  /** Seeds Poisson arrivals (as replay's simulation does). */
  seed: number;
  warmupRequests: number;
  /** Stop sending after this long (ms from the first measured request). */
  durationMs?: number;
  /**
   * With a schedule: at most this many in flight; an arrival waits for a request to end and is sent
   * late (vLLM's --max-concurrency beside --request-rate, a semaphore around each request).
   */
  maxInFlight?: number;
  /** Session workloads: at most this many sessions open at once (drive-sessions.ts). */
  maxSessions?: number;
}

export interface LoadDeps {
  send(req: WorkloadRequest, signal: AbortSignal | undefined): Promise<RequestRecord>;
  now(): number;
  sleep(ms: number): Promise<void>;
  onProgress?(done: number, total: number): void;
  /** Stops sending (Ctrl-C); in-flight requests are aborted through the same signal. */
  stop?: AbortSignal;
  /** Called with startMs once warm-up is over, just before the first measured request (fault schedules and the audit start here). */
  onStart?(startMs: number): void;
}

export interface TimedRecord extends RequestRecord {
  /** Index of the request in the workload. */
  index: number;
  /** Requests in flight when this one was sent (this one included). */
  inFlightAtSend: number;
  /** A session turn's session number and 1-based turn (session workloads only). */
  session?: { session: number; turn: number };
}

export interface LoadResult {
  records: TimedRecord[];
  /** Clock time just before the first measured request was sent. */
  startMs: number;
  /** Clock time when the last measured request ended. */
  endMs: number;
  warmup: { sent: number; failed: number };
  /** True when --duration or a stop signal ended sending before the workload did. */
  cutShort: boolean;
}

export async function driveLoad(plan: LoadPlan, deps: LoadDeps): Promise<LoadResult> {
  const warmup = await runWarmup(plan, deps);
  const n = plan.workload.length;
  const records: TimedRecord[] = [];
  let inFlight = 0;
  let cutShort = false;
  const startMs = deps.now();
  deps.onStart?.(startMs);
  const expired = () => deps.stop?.aborted === true || (plan.durationMs !== undefined && deps.now() - startMs >= plan.durationMs);

  // A place under maxInFlight: a finished request hands its place straight to the oldest waiter (the
  // count stays), so a new arrival cannot slip in between.
  const waiters: (() => void)[] = [];
  const free = () => plan.maxInFlight === undefined || inFlight < plan.maxInFlight;
  const release = () => {
    const next = waiters.shift();
    if (next) next();
    else inFlight--;
  };
  const one = async (index: number) => {
    // A free place is taken synchronously, so the request is on its way before anything else runs.
    if (free()) inFlight++;
    else {
      await new Promise<void>((resolve) => waiters.push(resolve));
      if (deps.stop?.aborted) return release(); // stopped while waiting: never sent
    }
    const inFlightAtSend = inFlight;
    const rec = await deps.send(plan.workload[index]!, deps.stop);
    release();
    records.push({ ...rec, index, inFlightAtSend });
    deps.onProgress?.(records.length, n);
  };

  if (plan.arrival.kind === "concurrency") {
    let next = 0;
    const loop = async () => {
      while (next < n) {
        if (expired()) {
          cutShort = true;
          return;
        }
        await one(next++);
      }
    };
    await Promise.all(Array.from({ length: Math.min(plan.arrival.concurrency, n) }, loop));
  } else {
    const times = arrivalTimesMs(plan.workload, plan.arrival, createRng(plan.seed))!;
    const order = Array.from({ length: n }, (_, i) => i).sort((a, b) => times[a]! - times[b]! || a - b);
    const running: Promise<void>[] = [];
    // Ctrl-C ends a wait for the next arrival at once (trace gaps can be minutes long).
    const stopped = new Promise<void>((resolve) => (deps.stop?.aborted ? resolve() : deps.stop?.addEventListener("abort", () => resolve(), { once: true })));
    for (const i of order) {
      const wait = startMs + times[i]! - deps.now();
      if (wait > 0) await Promise.race([deps.sleep(wait), stopped]);
      if (expired() || (plan.durationMs !== undefined && times[i]! >= plan.durationMs)) {
        cutShort = true;
        break;
      }
      running.push(one(i));
    }
    await Promise.all(running);
  }
  return { records, startMs, endMs: deps.now(), warmup, cutShort };
}

async function runWarmup(plan: LoadPlan, deps: LoadDeps): Promise<{ sent: number; failed: number }> {
  const count = Math.min(plan.warmupRequests, plan.workload.length);
  if (count === 0) return { sent: 0, failed: 0 };
  // As vLLM's warm-up: the first requests, at the run's concurrency (all at once without one).
  const width = plan.arrival.kind === "concurrency" ? Math.min(plan.arrival.concurrency, count) : count;
  let next = 0;
  let failed = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < count && deps.stop?.aborted !== true) {
        const rec = await deps.send(plan.workload[next++]!, deps.stop);
        if (!rec.ok) failed++;
      }
    }),
  );
  return { sent: count, failed };
}
