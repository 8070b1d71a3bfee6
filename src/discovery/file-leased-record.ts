// One record this process owns in the file backend, on its process lease (file-lease.ts): written
// at put and on update, deleted on withdraw, never rewritten to renew. Writes for one record are
// serialised (owned-record.ts) so a re-publish can never land after the withdraw and resurrect it.
import type { RecordFiles } from "./file-io.ts";
import type { FileProcessLease, LeasedFile } from "./file-lease.ts";
import { encodeRecord, LEASED_RECORD_FORMAT } from "./file-record.ts";
import { OwnedRecord } from "./owned-record.ts";
import type { RecordOwner } from "./store.ts";

export interface FileRecordDeps {
  files: RecordFiles;
  owner: RecordOwner;
  /** Called once the withdrawn record's file is gone, so the store stops tracking it. */
  onWithdrawn(record: FileRecord): void;
}

export class FileRecord extends OwnedRecord implements LeasedFile {
  constructor(
    key: string,
    readonly fileName: string,
    value: unknown,
    private readonly lease: FileProcessLease,
    private readonly deps: FileRecordDeps,
  ) {
    super(key, value);
  }

  /** First write; a failure here surfaces to the caller of put(). */
  async start(): Promise<void> {
    this.lease.records.add(this);
    try {
      await this.enqueue(() => this.write());
    } catch (err) {
      this.lease.records.delete(this);
      throw err;
    }
  }

  withdraw(): Promise<void> {
    if (this.withdrawn) return this.settled();
    this.withdrawn = true;
    this.lease.records.delete(this);
    return this.enqueue(async () => {
      try {
        await this.deps.files.removeIfOwned(this.fileName, this.key, this.deps.owner.instanceId);
      } finally {
        this.deps.onWithdrawn(this);
      }
    });
  }

  /**
   * After the lease lapsed or the directory was replaced: writes the record again where its file is
   * gone or holds an older version of ours (a restored copy). A record another process put since
   * stays theirs; an unreadable one is left alone (it may be a passing error).
   */
  restore(): Promise<void> {
    return this.enqueue(async () => {
      if (this.withdrawn) return;
      const read = await this.deps.files.read(this.fileName, this.key);
      if (read.kind === "invalid") return;
      if (read.kind === "record") {
        const { owner, revision, lease } = read.record;
        if (owner.instanceId !== this.deps.owner.instanceId) return;
        if (revision === this.revision && lease === this.lease.fileName) return; // as we wrote it
      }
      await this.write();
    });
  }

  protected async write(): Promise<void> {
    const text = encodeRecord(
      { format: LEASED_RECORD_FORMAT, key: this.key, owner: this.deps.owner, revision: this.revision, leaseTtlMs: this.lease.leaseTtlMs, leaseExpiresAtMs: 0, lease: this.lease.fileName },
      this.valueJson,
    );
    await this.deps.files.writeAtomic(this.fileName, text, this.deps.owner.instanceId);
  }
}
