// The mocker's engines: one mock engine per (worker, rank), each in the RankSlot the live loop
// steps and the HTTP API submits to. Event outlets are attached to the slots later.
import type { MockerConfig } from "../../config/mocker.ts";
import { createEngine } from "../../core/engine/mock-engine.ts";
import type { Logger } from "../../lib/logger.ts";
import { createBlockHasher } from "../../lib/xxh3.ts";
import { engineConfigFrom } from "../engine-config.ts";
import type { WorkerIdentity } from "./identity.ts";
import { RankSlot } from "./worker-pool.ts";

/** Rank slots per worker, indexed [worker][rank]. */
export function createRankSlots(config: MockerConfig, workers: readonly WorkerIdentity[], logger: Logger): RankSlot[][] {
  const hasher = createBlockHasher();
  const engineConfig = engineConfigFrom(config);
  const wallSeconds = () => Date.now() / 1000;
  return workers.map((id) =>
    Array.from({ length: config.dataParallelSize }, (_, r) => new RankSlot(id.index, r, createEngine(engineConfig, { hasher }), wallSeconds, logger)),
  );
}
