// Where LoRA adapters live when a run places them itself (replay, `bench` figures): rendezvous
// (highest random weight) hashing, Dynamo's default LoRA placement: each adapter on the `replicas`
// workers that score highest for it, so adding or removing a worker moves only its own adapters.

/** A worker's score for an adapter (higher wins); any well-mixed 64-bit hash of the pair. */
export type PlacementScore = (adapter: string, worker: number) => bigint;

/** Per adapter, the workers holding it (ascending); every worker when replicas ≥ workers. */
export function placeAdapters(adapters: Iterable<string>, workers: number, replicas: number, score: PlacementScore): Map<string, number[]> {
  if (!Number.isInteger(replicas) || replicas < 1) throw new RangeError(`LoRA replicas must be an integer ≥ 1, got ${replicas}`);
  const out = new Map<string, number[]>();
  for (const a of adapters) {
    if (out.has(a)) continue;
    const ranked = Array.from({ length: workers }, (_, w) => ({ w, s: score(a, w) })).sort((x, y) => (x.s === y.s ? x.w - y.w : x.s > y.s ? -1 : 1));
    out.set(a, ranked.slice(0, Math.min(replicas, workers)).map((r) => r.w).sort((x, y) => x - y));
  }
  return out;
}
