// The process lease of the file backend (one per store and TTL, like the etcd backend's one lease
// per process): one small file, `.lease-<owner>-<ttl>.json`, rewritten every TTL/3; every record
// this store puts with that TTL names it and lives exactly as long as it does. Renewing costs one
// write however many records there are: with one lease per record, 4 mockers × 2,048 records plus
// an agent's 4,096 meant ~3,700 rewrites a second, each waking every watcher, and on a busy host
// renewals fell behind, records lapsed and the agent kept detaching and re-attaching slots.
// When a renewal finds it came late (readers may have dropped and deleted records), the lease
// file gone (collected, or the directory wiped) or the directory replaced (a different inode: it
// may hold none or older versions of our records), it re-writes the records that are missing or
// not as we wrote them, and checks again on the next renewals, since a reader that saw the lapse
// may still be deleting.
import type { RecordFiles } from "./file-io.ts";
import { leaseFileName } from "./file-names.ts";
import { encodeLease } from "./file-record.ts";
import type { DiscoveryLogger, RecordOwner } from "./store.ts";

/** Renewals that re-check the records after a lapse (a reader mid-collection may delete one more). */
const REPAIR_RENEWALS = 2;

/** What the lease needs from each record on it. */
export interface LeasedFile {
  readonly fileName: string;
  readonly isWithdrawn: boolean;
  /** Writes the record again if its file is missing or holds an older version of ours (never over another owner's record). */
  restore(): Promise<void>;
}

export interface FileLeaseDeps {
  files: RecordFiles;
  owner: RecordOwner;
  logger: DiscoveryLogger;
  /** A repair began: the records were lost to readers and are being put back (counted). */
  onRepublish(): void;
}

export class FileProcessLease {
  readonly fileName: string;
  readonly records = new Set<LeasedFile>();
  /** Expiry written in the lease file by the last successful write (0 before the first). */
  expiresAtMs = 0;
  /** The directory the lease file was last written in (file-io.ts dirIdentity). */
  private dirId: string | undefined;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private tick: Promise<void> = Promise.resolve();
  private repairsLeft = 0;
  private closed = false;
  /** Renewals are skipped until this wall ms (DiscoveryStore.holdRenewals). */
  heldUntilMs = 0;

  constructor(
    readonly leaseTtlMs: number,
    private readonly deps: FileLeaseDeps,
  ) {
    this.fileName = leaseFileName(deps.owner.instanceId, leaseTtlMs);
  }

  /** First write; a failure surfaces to the put that asked for the lease. */
  async start(): Promise<void> {
    await this.write();
    this.schedule();
  }

  /** Stops renewing and deletes the lease file (after the records on it are withdrawn). */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearTimeout(this.timer);
    await this.tick;
    await this.deps.files.remove(this.fileName).catch((err: unknown) => this.deps.logger.warn(`discovery: could not remove lease file ${this.fileName}: ${(err as Error).message}`));
  }

  private schedule(): void {
    if (this.closed) return;
    // TTL/3 leaves two more chances to renew before readers drop the records.
    this.timer = setTimeout(() => {
      this.tick = this.renew().finally(() => this.schedule());
    }, Math.max(1, Math.floor(this.leaseTtlMs / 3)));
  }

  private async renew(): Promise<void> {
    if (this.closed || Date.now() < this.heldUntilMs) return;
    const lateMs = Date.now() - this.expiresAtMs;
    const present = await this.deps.files.exists(this.fileName);
    const dirId = await this.deps.files.dirIdentity();
    if (lateMs > 0 || !present || dirId !== this.dirId) {
      const why =
        lateMs > 0 ? `lapsed ${lateMs} ms before renewal (event loop stalled?)`
        : dirId !== this.dirId ? `directory ${this.deps.files.dir} was replaced (removed and re-created, or swapped)`
        : "file was removed";
      this.deps.logger.warn(`discovery: lease ${this.fileName} of ${this.records.size} record(s): ${why}; readers may have dropped them, re-publishing`);
      this.repairsLeft = REPAIR_RENEWALS + 1;
      this.deps.onRepublish();
    }
    try {
      await this.write();
    } catch (err) {
      // Keep trying on the next tick; readers drop the records if this persists past the TTL.
      this.deps.logger.warn(`discovery: could not renew lease ${this.fileName} in ${this.deps.files.dir}: ${(err as Error).message}`);
      return;
    }
    if (this.repairsLeft > 0) {
      this.repairsLeft--;
      await this.restoreRecords();
    }
  }

  private async write(): Promise<void> {
    const expiresAtMs = Date.now() + this.leaseTtlMs;
    await this.deps.files.writeAtomic(this.fileName, encodeLease({ owner: this.deps.owner, leaseTtlMs: this.leaseTtlMs, leaseExpiresAtMs: expiresAtMs }), this.deps.owner.instanceId);
    this.expiresAtMs = expiresAtMs;
    this.dirId = await this.deps.files.dirIdentity(); // the write re-creates a removed directory
  }

  /** Re-writes the records whose files are gone or not as we wrote them, a few at a time. */
  private async restoreRecords(): Promise<void> {
    const records = [...this.records];
    let next = 0;
    const lane = async () => {
      for (let i = next++; i < records.length; i = next++) {
        const r = records[i]!;
        if (this.closed) return;
        if (!r.isWithdrawn) await r.restore().catch((err: unknown) => this.deps.logger.warn(`discovery: could not re-publish ${r.fileName}: ${(err as Error).message}`));
      }
    };
    await Promise.all(Array.from({ length: Math.min(RESTORE_CONCURRENCY, records.length) }, lane));
  }
}

/** Records checked (and re-written) at once after a lapse. */
const RESTORE_CONCURRENCY = 32;
