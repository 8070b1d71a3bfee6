// `up --lora-modules … --lora-replicas K`: every mocker process gets the adapters, and with K each
// adapter is loaded on only K of the stack's workers (K per pool on a prefill/decode stack), placed
// by rendezvous hashing over global worker indices (Dynamo's default LoRA placement; scores from
// the block hasher, so a stack of the same shape places alike every time).
import type { UpConfig } from "../../config/up.ts";
import { parseLoraModules } from "../../config/lora-modules.ts";
import { placeAdapters } from "../../core/routing/lora-placement.ts";
import { createBlockHasher } from "../../lib/xxh3.ts";

/** The LoRA flags of the mocker process whose workers are global `first` … `first + count − 1`. */
export function loraFlagsFor(config: UpConfig, first: number, count: number, totalWorkers: number): { loraModules: string | undefined; loraModulesPerWorker: string | undefined } {
  if (config.loraModules === undefined) return { loraModules: undefined, loraModulesPerWorker: undefined };
  if (config.loraReplicas === undefined || config.loraReplicas >= (config.prefillWorkers === undefined ? totalWorkers : Math.max(config.prefillWorkers, totalWorkers - config.prefillWorkers))) return { loraModules: config.loraModules, loraModulesPerWorker: undefined };
  const modules = parseLoraModules(config.loraModules, config.modelName);
  // upProblems refused a bad list before any plan is made.
  if (typeof modules === "string") throw new RangeError(modules);
  const hasher = createBlockHasher();
  // A prefill/decode stack places each adapter K times in each pool (the prefill pool is the first
  // workers): a request's two legs each need a holder in their own pool.
  const prefill = config.prefillWorkers;
  const [start, size] = prefill === undefined ? [0, totalWorkers] : first < prefill ? [0, prefill] : [prefill, totalWorkers - prefill];
  const placement = placeAdapters(modules.map((m) => m.name), size, config.loraReplicas, (a, w) => hasher.localHash(Uint32Array.of(start + w), hasher.seedOf(a)));
  const perWorker = Array.from({ length: count }, (_, j) => modules.filter((m) => placement.get(m.name)!.includes(first - start + j)).map((m) => m.name));
  return { loraModules: config.loraModules, loraModulesPerWorker: JSON.stringify(perWorker) };
}
