// The router hint a routed request may carry: when another worker of the same KV-transfer domain
// that accepts hints holds a longer prefix of the prompt than the chosen (worker, rank), a
// `kv.fetch` action naming that holder's source control endpoint and the blocks to fetch.
import type { KvIndex } from "../../core/index/kv-index.ts";
import { longerPrefixRank } from "../../core/routing/hints.ts";
import type { Router } from "../../core/routing/router.ts";
import type { KvHint } from "../../protocol/generate.ts";
import type { WorkerRecord } from "../../protocol/records.ts";

/** The capability a worker record lists when it accepts router hints. */
export const ROUTER_HINT = "router_hint";

export interface HintInput {
  router: Router;
  index: KvIndex;
  /** The chosen candidate, its worker and its cached prefix (device + host blocks) as the router saw it. */
  chosen: { rankId: number; record: WorkerRecord; overlapBlocks: number };
  /** The prompt's block sequence hashes. */
  seq: BigUint64Array;
  /** The worker and rank behind a candidate's rank id. */
  at(rankId: number): { worker: { record: WorkerRecord }; rank: number };
  /** A fresh message id; called only when a hint is made. */
  nextId(): string;
}

export function kvHintFor(h: HintInput): KvHint | undefined {
  const domain = h.chosen.record.kv_transfer_domain;
  const rankIds: number[] = [];
  for (const s of h.router.candidates) {
    if (s === h.chosen.rankId) continue;
    const w = h.at(s).worker.record;
    if (w.capabilities.includes(ROUTER_HINT) && w.kv_transfer_domain === domain) rankIds.push(s);
  }
  if (rankIds.length === 0) return undefined;
  let chosen = h.chosen.overlapBlocks;
  if (h.router.mode !== "kv") chosen = longerPrefixRank(h.index, h.seq, -1, [h.chosen.rankId])?.blocks ?? 0;
  const best = longerPrefixRank(h.index, h.seq, chosen, rankIds);
  if (!best) return undefined;
  const holder = h.at(best.rankId);
  const owner = holder.worker.record.cache_owner_ids?.[holder.rank];
  const endpoint = holder.worker.record.router_hint_sources?.find((x) => x.cache_owner_id === owner)?.source_control_endpoint;
  if (!endpoint) return undefined;
  const id = h.nextId();
  return {
    protocol_version: "0.1",
    message_id: id,
    actions: [
      {
        action_id: `${id}-0`,
        action_type: "kv.fetch",
        action_version: "1.0",
        payload: { source_control_endpoint: endpoint, block_hashes: [...h.seq.subarray(0, best.blocks)].map(String) },
      },
    ],
  };
}
