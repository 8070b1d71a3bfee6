// Routing without KV events (as Dynamo's approximate indexer, `--no-router-kv-events`): each
// decision is written into the index as if the chosen (worker, rank) had stored the prompt's
// blocks, and each such block expires a fixed time after the last decision that wrote it.
// Time is passed in (virtual in replay, monotonic in the frontend).
import type { KvIndex } from "../index/kv-index.ts";
import { SPLIT, splitU64, U64Map } from "../kv/u64-map.ts";

interface Written {
  atMs: number;
  rankId: number;
  hashes: ArrayLike<bigint>;
  stamp: number;
}

export class ApproximateIndex {
  /** Per rank: the stamp of the last decision that wrote each block. */
  private readonly stamps = new Map<number, U64Map>();
  // Decisions in time order (one TTL for all, so expiry order = write order).
  private queue: Written[] = [];
  private head = 0;
  private stamp = 0;

  constructor(
    private readonly index: KvIndex,
    private readonly ttlMs: number,
  ) {}

  /** The decision sent a prompt with these full-block hashes to `rankId` at `nowMs`. */
  record(rankId: number, hashes: ArrayLike<bigint>, nowMs: number): void {
    if (hashes.length === 0) return;
    // Stamps stay in U64Map's value range; a wrap would need 2^31 decisions within one TTL.
    this.stamp = (this.stamp + 1) % 0x7fff_fffe;
    let own = this.stamps.get(rankId);
    if (own === undefined) this.stamps.set(rankId, (own = new U64Map()));
    for (let i = 0; i < hashes.length; i++) {
      splitU64(hashes[i]!);
      own.set(SPLIT[0]!, SPLIT[1]!, this.stamp);
    }
    this.index.apply(rankId, { kind: "stored", tier: "device", blockHashes: Array.from(hashes) });
    this.queue.push({ atMs: nowMs + this.ttlMs, rankId, hashes, stamp: this.stamp });
  }

  /** Removes the blocks whose last write is older than the TTL. */
  expire(nowMs: number): void {
    const q = this.queue;
    while (this.head < q.length && q[this.head]!.atMs <= nowMs) {
      const w = q[this.head++]!;
      const own = this.stamps.get(w.rankId);
      if (own === undefined) continue;
      const gone: bigint[] = [];
      for (let i = 0; i < w.hashes.length; i++) {
        const h = w.hashes[i]!;
        splitU64(h);
        if (own.get(SPLIT[0]!, SPLIT[1]!) !== w.stamp) continue; // written again since: kept
        own.delete(SPLIT[0]!, SPLIT[1]!);
        gone.push(h);
      }
      if (gone.length > 0) this.index.apply(w.rankId, { kind: "removed", tier: "device", blockHashes: gone });
    }
    if (this.head > 1024 && this.head * 2 > q.length) {
      this.queue = q.slice(this.head);
      this.head = 0;
    }
  }

  /** The rank left routing: what was written for it is forgotten (the index drops it too). */
  dropRank(rankId: number): void {
    this.stamps.delete(rankId);
  }
}
