// Applies a KV event log to per-tier sets of sequence hashes: what a consumer of the engine's
// events believes is resident. Used by the invariant tests (log replay == engine state) and
// usable by any tool that needs residency from events alone.
import type { KvEvent, KvTier } from "./kv-events.ts";

export class ResidencyReplayer {
  readonly tiers: Record<KvTier, Set<bigint>> = { device: new Set(), host: new Set() };
  /** Events that did not fit the state (store of a resident hash, removal of an absent one). */
  readonly anomalies: string[] = [];

  apply(event: KvEvent): void {
    if (event.kind === "cleared") {
      this.tiers[event.tier].clear();
      return;
    }
    const set = this.tiers[event.tier];
    if (event.kind === "stored") {
      if (event.tokenIds.length !== event.blockHashes.length * event.blockSize) {
        this.anomalies.push(`stored ${event.tier}: ${event.tokenIds.length} token ids for ${event.blockHashes.length} blocks`);
      }
      for (const h of event.blockHashes) {
        if (set.has(h)) this.anomalies.push(`stored ${event.tier}: ${h} already resident`);
        set.add(h);
      }
    } else {
      for (const h of event.blockHashes) {
        if (!set.delete(h)) this.anomalies.push(`removed ${event.tier}: ${h} not resident`);
      }
    }
  }

  applyAll(events: readonly KvEvent[]): void {
    for (const e of events) this.apply(e);
  }
}
