// Wires a mocker process's LoRA adapters: the --lora-modules every worker loads at start, the pool's
// check and count of adapter requests, vLLM's lora_id on each raw publisher's BlockStored, the LoRA
// metrics, and each worker's discovery record rewritten when its adapters change.
import type { MockerConfig } from "../../config/mocker.ts";
import { parseLoraModules, parseModulesPerWorker, type LoraModule } from "../../config/lora-modules.ts";
import { ConfigError } from "../../lib/errors.ts";
import type { Logger } from "../../lib/logger.ts";
import type { WorkerIdentity } from "./identity.ts";
import { LoraAdapters } from "./lora-adapters.ts";
import { LoraMetrics } from "./lora-metrics.ts";
import { updateWorkerRecord, type MockerRecordsPlan } from "./publish-records.ts";
import type { RankEngine } from "./rank-engine.ts";
import type { MockerWorkerPool } from "./worker-pool.ts";

export interface MockerLora {
  readonly adapters: LoraAdapters;
  /** From now on, adapter changes rewrite the workers' records of this plan. */
  follow(plan: MockerRecordsPlan): void;
}

export function attachLora(config: MockerConfig, pool: MockerWorkerPool, ranks: readonly (readonly RankEngine[])[], workers: readonly WorkerIdentity[], logger: Logger): MockerLora {
  const modules = config.loraModules === undefined ? [] : parseLoraModules(config.loraModules, config.modelName);
  if (typeof modules === "string") throw new ConfigError([modules]);
  const perWorker = config.loraModulesPerWorker === undefined ? undefined : parseModulesPerWorker(config.loraModulesPerWorker, modules, config.numWorkers);
  if (typeof perWorker === "string") throw new ConfigError([perWorker]);
  const placed = (w: number): readonly LoraModule[] => (perWorker === undefined ? modules : (perWorker[w] ?? []));
  let plan: MockerRecordsPlan | undefined;
  const adapters = new LoraAdapters(config.numWorkers, modules, (w) => {
    const id = workers[w];
    if (plan === undefined || id === undefined) return;
    updateWorkerRecord(plan, id).catch((err: unknown) => logger.warn(`worker ${id.workerId}: updating its discovery record after a LoRA adapter change failed: ${err instanceof Error ? err.message : String(err)}`));
  }, placed);
  pool.lora = { adapters, metrics: new LoraMetrics(adapters, config.maxLoras, () => Date.now() / 1000) };
  for (const worker of ranks) for (const rank of worker) if (rank.rawPublisher !== undefined) rank.rawPublisher.loraIdOf = (name) => adapters.idOf(name);
  if (modules.length > 0) logger.info(`LoRA adapters ${config.loraModulesPerWorker === undefined ? "on every worker" : "placed per worker"}: ${modules.map((m) => m.name).join(", ")} (--max-loras ${config.maxLoras})`);
  return {
    adapters,
    follow: (p) => {
      plan = p;
    },
  };
}
