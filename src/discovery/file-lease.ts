// One leased record owned by this process in the file backend: written at put, rewritten (atomic)
// every TTL/3 to push its lease expiry forward, deleted on withdraw. Writes for one record are
// serialised (owned-record.ts) so a renewal can never land after the withdraw and resurrect it.
import type { RecordFiles } from "./file-io.ts";
import { encodeRecord, RECORD_FORMAT } from "./file-record.ts";
import { OwnedRecord } from "./owned-record.ts";
import type { DiscoveryLogger, RecordOwner } from "./store.ts";

export interface FileLeaseDeps {
  files: RecordFiles;
  owner: RecordOwner;
  logger: DiscoveryLogger;
  /** Called once the withdrawn record's file is gone, so the store stops tracking it. */
  onWithdrawn(lease: FileLease): void;
}

export class FileLease extends OwnedRecord {
  private timer: ReturnType<typeof setTimeout> | undefined;
  private expiresAtMs = 0;

  constructor(
    key: string,
    private readonly fileName: string,
    value: unknown,
    readonly leaseTtlMs: number,
    private readonly deps: FileLeaseDeps,
  ) {
    super(key, value);
  }

  /** First write; a failure here surfaces to the caller of put(). */
  async start(): Promise<void> {
    await this.enqueue(() => this.write());
    this.scheduleRenewal();
  }

  withdraw(): Promise<void> {
    if (this.withdrawn) return this.settled();
    this.withdrawn = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    return this.enqueue(async () => {
      try {
        await this.deps.files.removeIfOwned(this.fileName, this.key, this.deps.owner.instanceId);
      } finally {
        this.deps.onWithdrawn(this);
      }
    });
  }

  private scheduleRenewal(): void {
    if (this.withdrawn) return;
    // TTL/3 leaves two more chances to renew before readers drop the record.
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.enqueue(() => this.renew()).finally(() => this.scheduleRenewal());
    }, Math.max(1, Math.floor(this.leaseTtlMs / 3)));
  }

  private async renew(): Promise<void> {
    if (this.withdrawn) return;
    const lateMs = Date.now() - this.expiresAtMs;
    if (lateMs > 0) {
      this.deps.logger.warn(`discovery: lease of ${this.key} lapsed ${lateMs} ms before renewal (event loop stalled?); readers may have dropped it, re-publishing`);
    }
    try {
      await this.write();
    } catch (err) {
      // Keep trying on the next tick; readers drop the record if this persists past the TTL.
      this.deps.logger.warn(`discovery: could not renew ${this.key} in ${this.deps.files.dir}: ${(err as Error).message}`);
    }
  }

  protected async write(): Promise<void> {
    const expiresAtMs = Date.now() + this.leaseTtlMs;
    const text = encodeRecord(
      { format: RECORD_FORMAT, key: this.key, owner: this.deps.owner, revision: this.revision, leaseTtlMs: this.leaseTtlMs, leaseExpiresAtMs: expiresAtMs },
      this.valueJson,
    );
    await this.deps.files.writeAtomic(this.fileName, text, this.deps.owner.instanceId);
    this.expiresAtMs = expiresAtMs;
  }
}
