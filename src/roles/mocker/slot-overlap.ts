// SPEC §8: cache-slot ranges of mockers must not overlap; an overlap visible in discovery is refused
// at start-up, naming both owners. Checked before this mocker publishes anything: a live intent of
// another process for one of our CacheOwners is an overlap. One exception: an intent at the raw
// endpoint we now hold is our own previous incarnation (we bound its port, so it is gone) and
// lapses with its lease.
import type { DiscoveryEntry, DiscoveryStore } from "../../discovery/store.ts";
import { keys } from "../../discovery/keys.ts";
import { KvcrError } from "../../lib/errors.ts";
import { parseCacheOwner } from "../../protocol/cache-owner.ts";

export interface OurSlots {
  namespace: string;
  /** Each CacheOwner this process is about to publish, with the raw endpoint it will advertise. */
  owners: ReadonlyMap<string, string>;
  /** This process, as the message names it. */
  describe: string;
  /** The store's own owner id: records this process already holds are not overlaps. */
  selfInstanceId?: string;
  /** File backend (one host): a record whose writer is gone is a lease about to lapse, not an owner. */
  ownerAlive?: (pid: number) => boolean;
}

interface IntentLike {
  cache_owner_id?: unknown;
  worker_id?: unknown;
  raw_endpoint?: unknown;
}

/** The overlaps found (one line each); empty when none. */
export function slotOverlaps(ours: OurSlots, intents: readonly DiscoveryEntry[]): string[] {
  const lines: string[] = [];
  for (const e of intents) {
    const intent = (e.value ?? {}) as IntentLike;
    const owner = typeof intent.cache_owner_id === "string" ? intent.cache_owner_id : undefined;
    if (!owner || !ours.owners.has(owner) || e.owner.instanceId === ours.selfInstanceId) continue;
    if (intent.raw_endpoint === ours.owners.get(owner)) continue; // our previous incarnation
    if (ours.ownerAlive && !ours.ownerAlive(e.owner.pid)) continue;
    const slot = parseCacheOwner(owner)?.slot;
    lines.push(
      `cache slot ${slot ?? owner} is already published by worker ${String(intent.worker_id)} at ${String(intent.raw_endpoint)} (pid ${e.owner.pid}); ` +
        `this mocker (${ours.describe}) would publish it at ${ours.owners.get(owner)}`,
    );
  }
  return lines;
}

/** Throws naming both owners when another live process already publishes one of our slots. */
export async function refuseSlotOverlap(store: DiscoveryStore, ours: OurSlots): Promise<void> {
  if (ours.owners.size === 0) return;
  const lines = slotOverlaps(ours, await store.list(keys.kindPrefix(ours.namespace, "intent")));
  if (lines.length === 0) return;
  const shown = lines.slice(0, 3).join("; ") + (lines.length > 3 ? `; and ${lines.length - 3} more` : "");
  throw new KvcrError(
    "CACHE_SLOT_OVERLAP",
    `cache slot ranges overlap: ${shown}. Give each mocker a disjoint --kv-state-agent-cache-slot range (up: --cache-slot-base) or stop the other one`,
  );
}
