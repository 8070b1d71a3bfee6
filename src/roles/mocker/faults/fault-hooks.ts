// What starting and ending a fault does outside the per-batch and per-request paths: reset_seq and
// clear_all act once on each targeted rank, pause and slow change how the live loop steps a rank,
// lease_stop holds the discovery lease, exit ends the process. Event and HTTP kinds need nothing
// here: the publisher and /v1/generate ask the table as batches and requests come.
import type { Logger } from "../../../lib/logger.ts";
import type { DiscoveryStore } from "../../../discovery/store.ts";
import { faultFamily, type FaultKind } from "../../../protocol/faults.ts";
import type { RankEngine } from "../rank-engine.ts";
import type { MockerWorkerPool } from "../worker-pool.ts";
import type { FaultTable, HeldFault } from "./fault-table.ts";

export interface FaultHookDeps {
  table: FaultTable;
  pool: MockerWorkerPool;
  store: DiscoveryStore;
  logger: Logger;
  /** Ends the process (process.exit; injected in tests). */
  exit: (code: number) => void;
}

/** Wires the table's start and end to the engines, the lease and the process. */
export function wireFaultHooks(deps: FaultHookDeps): void {
  const { table, pool, store, logger } = deps;
  const targeted = (held: HeldFault): RankEngine[] => pool.ranks.flatMap((w) => w.filter((r) => table.targets(held, r.worker, r.rank)));
  const rescale = (r: RankEngine) => (r.timeScale = table.find("slow", r.worker, r.rank)?.spec.factor ?? 1);

  table.onChange({
    started(held) {
      const spec = held.spec;
      switch (spec.kind) {
        case "reset_seq":
          for (const r of targeted(held)) r.rawPublisher?.resetSeq();
          break;
        case "clear_all":
          for (const r of targeted(held)) {
            if (r.engine.pendingRequests > 0) logger.info(`fault ${held.view.id} clear_all: worker ${r.worker} rank ${r.rank} clears once no request holds blocks (as vLLM's reset_prefix_cache)`);
            void r.clearCache().then(() => logger.info(`fault ${held.view.id} clear_all: worker ${r.worker} rank ${r.rank} cleared its device cache at ${new Date().toISOString()}`));
          }
          break;
        case "pause":
          for (const r of targeted(held)) r.pause();
          break;
        case "slow":
          for (const r of targeted(held)) rescale(r);
          break;
        case "lease_stop":
          store.holdRenewals?.(held.view.ends_at_ms ?? Number.POSITIVE_INFINITY);
          break;
        case "exit":
          // After the 201 answer has gone out: a crash, no cleanup (records lapse with the lease).
          logger.warn(`fault ${held.view.id} exit: exiting with code ${spec.code}`);
          setTimeout(() => deps.exit(spec.code), 50);
          break;
      }
    },
    ended(held) {
      switch (held.spec.kind) {
        case "pause":
          for (const r of targeted(held)) if (!table.has("pause", r.worker, r.rank)) pool.resume(r);
          break;
        case "slow":
          for (const r of targeted(held)) rescale(r);
          break;
        case "lease_stop":
          if (!table.any(["lease_stop"])) store.holdRenewals?.(0);
          break;
        case "reorder_batches":
          // A batch held back to be sent after the next one goes out now: an idle rank must not keep it.
          for (const r of targeted(held)) if (!table.has("reorder_batches", r.worker, r.rank)) r.rawPublisher?.flushHeld();
          break;
      }
    },
  });
}

/** Why this process cannot apply `kind`, if it cannot. `rawStreams`: its ranks publish raw vLLM events (event faults act there). */
export function unsupportedKind(kind: FaultKind, store: DiscoveryStore, rawStreams: boolean): string | undefined {
  if (kind === "lease_stop" && !store.holdRenewals) return `the ${store.backend} discovery store has no lease control`;
  if (faultFamily(kind) === "event" && !rawStreams) return "event-stream faults act on the raw vLLM stream, which this process does not publish (direct mode without --zmq-kv-events-ports): they would change nothing";
  return undefined;
}
