// Router events into the residency index, as the feed hands them over after decoding: each event's
// holder ((worker, rank) or CacheOwner) resolved to a rank id, its blocks' sequence hashes applied.
// Nothing is allocated per event (a single-block removal is most of a busy feed's events).
import type { IndexEvent, KvIndex } from "../../core/index/kv-index.ts";
import type { RouterEvent, RouterEventHolder } from "../../protocol/router-events.ts";

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

export class RouterEventFeed {
  private readonly hashes: bigint[] = [];
  private readonly event: Mutable<IndexEvent> = { kind: "stored", tier: "device", blockHashes: this.hashes, parentHash: null };

  constructor(
    private readonly index: KvIndex,
    private readonly resolve: (holder: RouterEventHolder) => number | undefined,
  ) {}

  /** Applies the events in order; returns how many mapped to no known rank (dropped). */
  apply(events: readonly RouterEvent[]): number {
    let unmapped = 0;
    // A batch is mostly one (worker, rank)'s events: resolved once while it repeats (the map
    // lookups by worker id were a seventh of the cost of applying events).
    let lastWorker: string | undefined;
    let lastDpRank = -1;
    let lastRankId: number | undefined;
    const { event, hashes, index } = this;
    for (const e of events) {
      const holder = e.holder;
      let rankId: number | undefined;
      if ("workerId" in holder && holder.workerId === lastWorker && holder.dpRank === lastDpRank) rankId = lastRankId;
      else {
        rankId = this.resolve(holder);
        lastWorker = "workerId" in holder ? holder.workerId : undefined;
        lastDpRank = "workerId" in holder ? holder.dpRank : -1;
        lastRankId = rankId;
      }
      if (rankId === undefined) {
        unmapped++;
        continue;
      }
      if (e.kind === "cleared") {
        index.clearTier(rankId, e.tier);
        continue;
      }
      // One reused event and hash array: the index keeps neither.
      hashes.length = e.blocks.length;
      for (let i = 0; i < hashes.length; i++) hashes[i] = e.blocks[i]!.seqHash;
      event.kind = e.kind;
      event.tier = e.tier;
      // The parent lets the index drop a chain it could never match from block 0 (an orphan).
      event.parentHash = e.parentHash;
      index.apply(rankId, event);
    }
    hashes.length = 0;
    return unmapped;
  }
}
