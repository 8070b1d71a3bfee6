// Which etcd history this process follows: the cluster id and the highest revision any reply has
// shown. While its data lives, an etcd's revision never goes back and its cluster id never changes,
// so a reply showing either comes from an etcd that was wiped, restored from a backup or replaced
// (a wiped etcd started with the same flags keeps its cluster id: only the revision tells). The
// store then has every watch list its prefix again and every lease re-check its records.
import type { EtcdHeader } from "./etcd-gateway.ts";

/** Taken when a request is sent: its reply must show at least this revision. */
export interface EpochMark {
  readonly generation: number;
  readonly revision: bigint;
}

export class EtcdEpoch {
  /** Bumped on each change seen: replies to requests sent before it tell nothing more. */
  private generation = 0;
  private revision = 0n;
  private clusterId = "";
  private readonly listeners = new Set<(why: string) => void>();

  mark(): EpochMark {
    return { generation: this.generation, revision: this.revision };
  }

  /**
   * Checks a reply's header against the mark taken when its request was sent. Only replies that
   * give etcd's current revision may check (unary replies, a watch's `created` answer); a watch
   * event's header only raises the revision (`check` false).
   */
  observe(mark: EpochMark, header: EtcdHeader | undefined, check = true): void {
    if (!header?.revision || mark.generation !== this.generation) return;
    const revision = BigInt(header.revision);
    const clusterId = header.cluster_id ?? "";
    let why: string | undefined;
    if (check && this.clusterId && clusterId && clusterId !== this.clusterId) why = `etcd cluster id changed from ${this.clusterId} to ${clusterId} (a different etcd)`;
    // Against the mark, not the latest: a reply to an older request may arrive after a newer one's.
    else if (check && revision < mark.revision) why = `etcd revision went back from ${mark.revision} to ${revision} (etcd wiped or restored from a backup)`;
    if (why) {
      this.generation++;
      this.revision = revision;
      this.clusterId = clusterId;
      for (const listener of [...this.listeners]) listener(why);
      return;
    }
    if (revision > this.revision) this.revision = revision;
    if (!this.clusterId) this.clusterId = clusterId;
  }

  /** Calls `listener(why)` on every change seen; returns the unsubscribe. */
  onChange(listener: (why: string) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}
