// A mocker's claim on its CacheOwner ordinals, checked before it publishes anything (the scan and the
// refusal are roles/shared/stack/ordinal-clash.ts's). An intent at the raw endpoint we now hold is our own
// previous incarnation (we bound its port, so it is gone) and lapses with its lease.
import type { DiscoveryEntry, DiscoveryStore, RecordOwner } from "../../discovery/store.ts";
import { refuseOrdinalClashes, ordinalClashes, type OrdinalClaim } from "../shared/stack/ordinal-clash.ts";

export interface OurOrdinals {
  namespace: string;
  /** Each CacheOwner this process is about to publish, with the raw endpoint it will advertise. */
  owners: ReadonlyMap<string, string>;
  /** This process, as the message names it. */
  describe: string;
  /** The store's own owner id: records this process already holds are not overlaps. */
  selfInstanceId?: string;
  /** A record whose writer is known to be gone (lib/process-alive.ts) is a lease about to lapse, not an owner. */
  ownerAlive?: (owner: RecordOwner) => boolean;
}

function claimOf(ours: OurOrdinals): OrdinalClaim {
  return {
    namespace: ours.namespace,
    selfInstanceId: ours.selfInstanceId,
    ownerAlive: ours.ownerAlive,
    clash: (intent) => {
      const ourEndpoint = ours.owners.get(intent.cacheOwnerId);
      if (ourEndpoint === undefined || intent.rawEndpoint === ourEndpoint) return undefined; // not ours, or our previous incarnation
      return (
        `CacheOwner ordinal ${intent.ordinal ?? intent.cacheOwnerId} is already published by worker ${String(intent.workerId)} at ${String(intent.rawEndpoint)} (pid ${intent.pid}); ` +
        `this mocker (${ours.describe}) would publish it at ${ourEndpoint}`
      );
    },
  };
}

/** The overlaps found (one line each); empty when none. */
export function ordinalOverlaps(ours: OurOrdinals, intents: readonly DiscoveryEntry[]): string[] {
  return ordinalClashes(claimOf(ours), intents);
}

/** Throws naming both owners when another live process already publishes one of our ordinals. */
export async function refuseOrdinalOverlap(store: DiscoveryStore, ours: OurOrdinals): Promise<void> {
  if (ours.owners.size === 0) return;
  await refuseOrdinalClashes(
    store,
    claimOf(ours),
    (clashes) => `CacheOwner ordinal ranges overlap: ${clashes}. Give each mocker a disjoint --kv-state-agent-cache-slot range (up: --cache-slot-base) or stop the other one`,
  );
}
