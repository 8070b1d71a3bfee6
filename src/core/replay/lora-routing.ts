// LoRA adapters in a replay: the adapters a workload names are placed on workers by rendezvous
// hashing (core/routing/lora-placement.ts) and each adapter's requests exclude every (worker, rank)
// that does not hold it, as the frontend's LoRA filter narrows candidates to holders.
import type { BlockHasher } from "../kv/block-hash.ts";
import { placeAdapters } from "../routing/lora-placement.ts";
import type { WorkloadRequest } from "../workload/workload.ts";

/**
 * Per adapter, the rank ids (worker × dp + rank) that do not hold it; undefined when every worker
 * holds every adapter (no replicas given, or as many as workers) or the workload names none.
 */
export function loraExclusions(workload: readonly WorkloadRequest[], workers: number, dp: number, replicas: number | undefined, hasher: BlockHasher): Map<string, Set<number>> | undefined {
  if (replicas === undefined || replicas >= workers) return undefined;
  const names = new Set<string>();
  for (const r of workload) if (r.loraName !== undefined) names.add(r.loraName);
  if (names.size === 0) return undefined;
  const placement = placeAdapters(names, workers, replicas, (a, w) => hasher.localHash(Uint32Array.of(w), hasher.seedOf(a)));
  const out = new Map<string, Set<number>>();
  for (const [name, holders] of placement) {
    const held = new Set(holders);
    const excluded = new Set<number>();
    for (let w = 0; w < workers; w++) if (!held.has(w)) for (let r = 0; r < dp; r++) excluded.add(w * dp + r);
    out.set(name, excluded);
  }
  return out;
}
