// `GET /v1/index`: the frontend's KV index in the residency shape (protocol/residency.ts), one
// holder per (worker, rank) it routes to, so it can be diffed against a mocker's truth
// (`GET /v1/residency`) or the agent's snapshot. Each holder carries its worker's request URL, so a
// client (bench's audit) finds the mockers through the frontend.
// The index keeps router (seq) hashes only: `local_hash` is "0" for every block; diffs go by seq hash.
import type { Residency, ResidencyHolder, ResidencyTier } from "../../protocol/residency.ts";
import type { RoutingState } from "./routing-state.ts";

const TIERS: readonly ResidencyTier[] = ["device", "host", "disk"];

/** Stands in for the local hash the index does not keep. */
export const INDEX_LOCAL_HASH = "0";

/**
 * The index as residency. `cursorOf` gives the router-event cursor a worker's state reflects
 * where its feed has one (left out otherwise).
 */
export function indexResidency(state: RoutingState, cursorOf?: (workerId: string) => number | undefined): Residency {
  const sources: ResidencyHolder[] = [];
  const workers = state.workerList().sort((a, b) => a.id.localeCompare(b.id, "en", { numeric: true }));
  for (const w of workers) {
    const cursor = cursorOf?.(w.id);
    w.rankIds.forEach((rankId, dpRank) => {
      const tiers = { device: [], host: [], disk: [] } as ResidencyHolder["tiers"];
      for (const tier of TIERS) {
        const hashes = state.index.blocksOf(rankId, tier).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
        tiers[tier] = hashes.map((h) => ({ seq_hash: h.toString(), local_hash: INDEX_LOCAL_HASH }));
      }
      sources.push({ worker_id: w.id, dp_rank: dpRank, url: w.record.request_url, ...(cursor !== undefined ? { cursor } : {}), tiers });
    });
  }
  return { sources };
}
