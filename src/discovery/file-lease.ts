// One leased record owned by this process in the file backend: written at put, rewritten (atomic)
// every TTL/3 to push its lease expiry forward, deleted on withdraw. Writes for one record are
// serialised so a renewal can never land after the withdraw and resurrect the record.
import { KvcrError } from "../lib/errors.ts";
import type { RecordFiles } from "./file-io.ts";
import { encodeRecord, RECORD_FORMAT, requireJson } from "./file-record.ts";
import type { DiscoveryLogger, LeasedRecord, RecordOwner } from "./store.ts";

export interface FileLeaseDeps {
  files: RecordFiles;
  owner: RecordOwner;
  logger: DiscoveryLogger;
  /** Called once the withdrawn record's file is gone, so the store stops tracking it. */
  onWithdrawn(lease: FileLease): void;
}

export class FileLease implements LeasedRecord {
  private valueJson: string;
  private revision = 1;
  private chain: Promise<void> = Promise.resolve();
  private timer: ReturnType<typeof setTimeout> | undefined;
  private withdrawn = false;
  private expiresAtMs = 0;

  constructor(
    readonly key: string,
    private readonly fileName: string,
    value: unknown,
    readonly leaseTtlMs: number,
    private readonly deps: FileLeaseDeps,
  ) {
    this.valueJson = requireJson(key, value);
  }

  /** First write; a failure here surfaces to the caller of put(). */
  async start(): Promise<void> {
    await this.enqueue(() => this.write());
    this.scheduleRenewal();
  }

  async update(value: unknown): Promise<void> {
    const valueJson = requireJson(this.key, value);
    if (this.withdrawn) return Promise.reject(new KvcrError("DISCOVERY_WITHDRAWN", `discovery record ${this.key} was withdrawn; put it again`));
    return this.enqueue(async () => {
      if (this.withdrawn) return;
      this.valueJson = valueJson;
      this.revision += 1;
      await this.write();
    });
  }

  /** True from the moment withdraw() is called (its file may still be being removed). */
  get isWithdrawn(): boolean {
    return this.withdrawn;
  }

  withdraw(): Promise<void> {
    if (this.withdrawn) return this.chain;
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

  async [Symbol.asyncDispose](): Promise<void> {
    await this.withdraw();
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

  private async write(): Promise<void> {
    const expiresAtMs = Date.now() + this.leaseTtlMs;
    const text = encodeRecord(
      { format: RECORD_FORMAT, key: this.key, owner: this.deps.owner, revision: this.revision, leaseTtlMs: this.leaseTtlMs, leaseExpiresAtMs: expiresAtMs },
      this.valueJson,
    );
    await this.deps.files.writeAtomic(this.fileName, text, this.deps.owner.instanceId);
    this.expiresAtMs = expiresAtMs;
  }

  private enqueue(op: () => Promise<void>): Promise<void> {
    const next = this.chain.then(op);
    this.chain = next.catch(() => {}); // one failed write must not block later ones
    return next;
  }
}
