// The mocker's engines: one mock engine per (worker, rank), each in the RankEngine the live loop
// steps and the HTTP app submits to. Event outlets are attached to them later.
import { DEFAULT_KV_TRANSFER_BANDWIDTH_GBPS, DEFAULT_KV_TRANSFER_TIMING_MODE } from "../../config/disaggregation.ts";
import type { MockerConfig } from "../../config/mocker.ts";
import { createEngine } from "../../core/engine/mock-engine.ts";
import type { Logger } from "../../lib/logger.ts";
import { createBlockHasher } from "../../lib/xxh3.ts";
import { engineConfigFrom } from "../shared/measure/engine-config-from-options.ts";
import type { WorkerIdentity } from "./identity.ts";
import { onceEach } from "../../lib/once-each.ts";
import { RankEngine } from "./rank-engine.ts";
import { VllmRankStats } from "./vllm-stats.ts";

/** Rank engines per worker, indexed [worker][rank]. */
/** `outputIds`: the ids output tokens are drawn from (a Dynamo card's tokenizer vocabulary), `count` from `first`. */
export function createRankEngines(config: MockerConfig, workers: readonly WorkerIdentity[], logger: Logger, clockMs: () => number, outputIds?: { first: number; count: number }): RankEngine[][] {
  const hasher = createBlockHasher();
  const engineConfig = { ...engineConfigFrom(config), kvTransferBandwidthGbps: config.kvTransferBandwidth ?? DEFAULT_KV_TRANSFER_BANDWIDTH_GBPS, kvTransferTimingMode: config.kvTransferTimingMode ?? DEFAULT_KV_TRANSFER_TIMING_MODE, ...(outputIds ? { firstOutputId: outputIds.first, vocabSize: outputIds.count } : {}) };
  const wallSeconds = () => Date.now() / 1000;
  const warn = onceEach((m) => logger.warn(m));
  return workers.map((id) =>
    Array.from({ length: config.dataParallelSize }, (_, r) => new RankEngine(id.index, r, createEngine(engineConfig, { hasher, warn }), wallSeconds, logger, new VllmRankStats(config.maxModelLen), clockMs)),
  );
}
