// Refusing CacheOwner ordinals another live process already publishes: the one scan of attachment
// intents in discovery and the one refusal, for `up` (before its mockers start) and each mocker
// (before it publishes). Callers say which intents clash with theirs and how to word it.
import { keys } from "../../../discovery/keys.ts";
import type { DiscoveryEntry, DiscoveryStore, RecordOwner } from "../../../discovery/store.ts";
import { KvcrError } from "../../../lib/errors.ts";
import { parseCacheOwner } from "../../../protocol/cache-owner.ts";

/** An attachment intent found in discovery; only its CacheOwner id is required to be there. */
export interface IntentFound {
  cacheOwnerId: string;
  /** The ordinal, when the id is a canonical CacheOwner id. */
  ordinal: bigint | undefined;
  workerId: unknown;
  dpRank: unknown;
  rawEndpoint: unknown;
  /** The process that published it. */
  pid: number;
}

export interface OrdinalClaim {
  namespace: string;
  /** One line naming both owners when `intent` holds one of our ordinals; undefined when it does not. */
  clash(intent: IntentFound): string | undefined;
  /** The store's own owner id: records this process already holds are not clashes. */
  selfInstanceId?: string;
  /** A record whose writer is known to be gone is a lease about to lapse, not an owner. */
  ownerAlive?: (owner: RecordOwner) => boolean;
}

/** The clash lines, in discovery's order; empty when none. */
export function ordinalClashes(claim: OrdinalClaim, intents: readonly DiscoveryEntry[]): string[] {
  const lines: string[] = [];
  for (const e of intents) {
    const v = (e.value ?? {}) as Record<string, unknown>;
    const id = v.cache_owner_id;
    if (typeof id !== "string" || e.owner.instanceId === claim.selfInstanceId) continue;
    const line = claim.clash({ cacheOwnerId: id, ordinal: parseCacheOwner(id)?.ordinal, workerId: v.worker_id, dpRank: v.dp_rank, rawEndpoint: v.raw_endpoint, pid: e.owner.pid });
    if (line !== undefined && (!claim.ownerAlive || claim.ownerAlive(e.owner))) lines.push(line);
  }
  return lines;
}

/** Throws CACHE_SLOT_OVERLAP when discovery shows a clash: `message` frames the first three lines. */
export async function refuseOrdinalClashes(store: DiscoveryStore, claim: OrdinalClaim, message: (clashes: string) => string): Promise<void> {
  const lines = ordinalClashes(claim, await store.list(keys.kindPrefix(claim.namespace, "intent")));
  if (lines.length === 0) return;
  const shown = lines.slice(0, 3).join("; ") + (lines.length > 3 ? ` (and ${lines.length - 3} more)` : "");
  throw new KvcrError("CACHE_SLOT_OVERLAP", message(shown));
}
