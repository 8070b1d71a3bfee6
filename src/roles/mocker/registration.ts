// Registers the mocker's workers in discovery: per worker its record, then its
// attachment intents. With --stagger-delay, workers go one after another with the delay between
// them; without, a few workers at a time (1,024 sequential puts are ~0.1 s on tmpfs and several
// times that on disk). Each record is handed to `keep` as soon as it is put, so a failure or a
// close mid-way leaves nothing behind that the caller cannot withdraw.
import type { DiscoveryStore, LeasedRecord } from "../../discovery/store.ts";

/** Workers registering at once without a stagger delay: enough to hide each put's latency. */
export const REGISTER_CONCURRENCY = 16;

export interface RegistrationPlan<W> {
  store: DiscoveryStore;
  workers: readonly W[];
  /** A worker's records in put order: its worker record first, then its intents. */
  recordsOf(worker: W): { key: string; value: unknown }[];
  /** Seconds between starting consecutive workers (0 = no stagger, bounded concurrency). */
  staggerDelayS: number;
  /** Takes a record just put; false once the mocker is closing (it must then withdraw it). */
  keep(record: LeasedRecord): Promise<boolean>;
  /** A worker's records are all in discovery. */
  registered(worker: W): void;
  /** True once the mocker is closing: no new worker starts registering. */
  closing(): boolean;
  sleep?: (ms: number) => Promise<void>;
}

/** Resolves once every worker registered (or closing stopped it); rejects with the first failure. */
export async function registerWorkers<W>(plan: RegistrationPlan<W>): Promise<void> {
  const sleep = plan.sleep ?? ((ms: number) => Bun.sleep(ms));
  const lanes = plan.staggerDelayS > 0 ? 1 : Math.min(REGISTER_CONCURRENCY, plan.workers.length);
  let next = 0;
  let stop = false;
  let failure: { error: unknown } | undefined;
  const lane = async () => {
    while (!stop && next < plan.workers.length) {
      const i = next++;
      if (i > 0 && plan.staggerDelayS > 0) await sleep(plan.staggerDelayS * 1000);
      if (stop || plan.closing()) return;
      const worker = plan.workers[i]!;
      try {
        for (const { key, value } of plan.recordsOf(worker)) {
          if (!(await plan.keep(await plan.store.put(key, value)))) return;
        }
      } catch (error) {
        // Other lanes finish the put they are in (kept, so withdrawn later) and start no more.
        stop = true;
        failure ??= { error };
        return;
      }
      plan.registered(worker);
    }
  };
  await Promise.all(Array.from({ length: lanes }, lane));
  if (failure) throw failure.error;
}
