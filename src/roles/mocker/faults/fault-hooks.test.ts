// What ending or refusing a fault does outside the per-batch path, with fakes for the pool's ranks.
import { expect, test } from "bun:test";
import { createLogger } from "../../../lib/logger.ts";
import { checkFault } from "../../../protocol/faults.ts";
import type { DiscoveryStore } from "../../../discovery/store.ts";
import type { MockerWorkerPool } from "../worker-pool.ts";
import { unsupportedKind, wireFaultHooks } from "./fault-hooks.ts";
import { FaultTable } from "./fault-table.ts";

const logger = createLogger({ level: "silent" });

test("a reorder_batches fault that ends sends the batch it held back (an idle rank does not keep it)", () => {
  const table = new FaultTable(["w"], 1, logger);
  try {
    let flushed = 0;
    const rank = { worker: 0, rank: 0, rawPublisher: { flushHeld: () => void flushed++ } };
    wireFaultHooks({ table, pool: { ranks: [[rank]] } as unknown as MockerWorkerPool, store: {} as DiscoveryStore, logger, exit: () => {} });
    const c = checkFault({ kind: "reorder_batches", count: 1 });
    if (!c.ok) throw new Error(c.problem);
    const added = table.add(c.value);
    if (!added.ok) throw new Error(added.problem);
    expect(flushed).toBe(0);
    table.remove(added.fault.id);
    expect(flushed).toBe(1);
  } finally {
    table.close();
  }
});

test("event-stream faults are refused (with the reason) by a process that publishes no raw stream", () => {
  const store = { backend: "file", holdRenewals: () => {} } as unknown as DiscoveryStore;
  expect(unsupportedKind("drop_batches", store, false)).toContain("does not publish");
  expect(unsupportedKind("drop_batches", store, true)).toBeUndefined();
  expect(unsupportedKind("http_error", store, false)).toBeUndefined();
});
