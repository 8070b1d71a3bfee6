// The etcd revision a watch holds each key at, so an event older than that is ignored: a delete
// that arrives late for a record put again since (a member that resumed after a hang replaying
// its backlog) must not eject the live record, nor an old put replace a newer one. Pure.

export type Admission = { fresh: true } | { fresh: false; heldRevision: bigint };

/** Deleted keys remembered past the last list; beyond it the oldest is folded into the floor. */
export const MAX_TOMBSTONES = 10_000;

export class KeyRevisions {
  /** Every change at or below it is known (the last list's revision, or older tombstones). */
  private floor = 0n;
  /** Per key: the mod revision of the put or delete held (a delete stays as a tombstone). */
  private readonly held = new Map<string, bigint>();
  /** Keys whose last change held is a delete, oldest first. */
  private readonly tombstones = new Set<string>();

  constructor(private readonly maxTombstones = MAX_TOMBSTONES) {}

  /** A range read at `revision` showed these keys at these mod revisions (and no others). */
  listed(revision: bigint, keys: Iterable<readonly [string, bigint]>): void {
    this.floor = revision;
    this.held.clear();
    this.tombstones.clear();
    for (const [key, rev] of keys) this.held.set(key, rev);
  }

  /**
   * Whether a put or delete of `key` at `modRevision` (etcd's event kv) is newer than what is held;
   * a fresh one becomes what is held. A delete's kv carries the revision of the delete itself, so
   * a put after it always has a higher one.
   */
  admit(type: "put" | "delete", key: string, modRevision: bigint): Admission {
    const held = this.held.get(key) ?? this.floor;
    if (modRevision <= held || modRevision <= this.floor) return { fresh: false, heldRevision: held > this.floor ? held : this.floor };
    this.held.set(key, modRevision);
    this.tombstones.delete(key);
    if (type === "delete") {
      this.tombstones.add(key);
      if (this.tombstones.size > this.maxTombstones) this.forgetOldestTombstone();
    }
    return { fresh: true };
  }

  /** Keys held (live or tombstoned), for tests and bounds. */
  get size(): number {
    return this.held.size;
  }

  /**
   * Drops the oldest tombstone, raising the floor to just below its revision: older events on
   * any key stay refused, and one at that very revision (another key of the same transaction)
   * still gets through.
   */
  private forgetOldestTombstone(): void {
    const oldest = this.tombstones.values().next().value as string;
    this.tombstones.delete(oldest);
    const rev = this.held.get(oldest)!;
    this.held.delete(oldest);
    if (rev - 1n > this.floor) this.floor = rev - 1n;
  }
}
