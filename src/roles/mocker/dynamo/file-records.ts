// Dynamo's file discovery backend, writer side: one flat file per key under DYN_FILE_KV/<bucket>,
// written as a `.tmp_` file then linked into place (watchers ignore the temp name), its mtime
// touched every ~3 s (Dynamo's TTL is 10 s and any process deletes older files), removed at close
// in reverse order. Records a previous incarnation of this process left behind are removed first.
import { existsSync, linkSync, mkdirSync, readFileSync, renameSync, unlinkSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { keyFileName } from "../../../protocol/dynamo/discovery-records.ts";
import type { Logger } from "../../../lib/logger.ts";

export const KEEPALIVE_MS = 3_000;

/** Where a Dynamo-runtime process writes its records: Dynamo's file store or its etcd layout. */
export interface DynamoRecords extends AsyncDisposable {
  put(bucket: string, key: string, value: unknown): Promise<void>;
  /** Every key (file path or etcd key) this process wrote. */
  readonly keys: readonly string[];
}

export class DynamoFileRecords implements DynamoRecords {
  private readonly owned: string[] = [];
  private readonly timer: ReturnType<typeof setInterval>;
  private readonly ownerFile: string;

  constructor(
    private readonly root: string,
    /** Names this process across restarts (its first worker's key): what a restart cleans up. */
    ownerTag: string,
    private readonly logger: Logger,
  ) {
    mkdirSync(join(root, ".kvcr-owners"), { recursive: true });
    this.ownerFile = join(root, ".kvcr-owners", keyFileName(ownerTag));
    this.removePreviousIncarnation();
    this.timer = setInterval(() => this.touch(), KEEPALIVE_MS);
    this.timer.unref?.();
  }

  /** Publishes `value` under `bucket/key` (create: a file already there is replaced). */
  async put(bucket: string, key: string, value: unknown): Promise<void> {
    const dir = join(this.root, bucket);
    mkdirSync(dir, { recursive: true });
    const path = join(dir, keyFileName(key));
    const tmp = join(dir, `.tmp_${crypto.getRandomValues(new Uint8Array(8)).reduce((s, b) => s + b.toString(16).padStart(2, "0"), "")}`);
    writeFileSync(tmp, JSON.stringify(value));
    if (existsSync(path)) renameSync(tmp, path);
    else {
      linkSync(tmp, path);
      unlinkSync(tmp);
    }
    this.owned.push(path);
    writeFileSync(this.ownerFile, this.owned.join("\n"));
  }

  private touch(): void {
    const now = new Date();
    for (const path of this.owned) {
      try {
        utimesSync(path, now, now);
      } catch (err) {
        // Deleted by someone (a watcher that thought us expired): write it again on the next put.
        this.logger.warn(`discovery record ${path} could not be kept alive: ${(err as Error).message}`);
      }
    }
  }

  private removePreviousIncarnation(): void {
    if (!existsSync(this.ownerFile)) return;
    const stale = readFileSync(this.ownerFile, "utf8").split("\n").filter(Boolean);
    for (const path of stale.reverse()) {
      try {
        unlinkSync(path);
      } catch {
        // already expired and removed by another process
      }
    }
    if (stale.length > 0) this.logger.info(`removed ${stale.length} discovery record(s) a previous incarnation left behind`);
    unlinkSync(this.ownerFile);
  }

  get keys(): readonly string[] {
    return this.owned;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    clearInterval(this.timer);
    for (const path of [...this.owned].reverse()) {
      try {
        unlinkSync(path);
      } catch {
        // expired and removed by another process meanwhile
      }
    }
    this.owned.length = 0;
    try {
      unlinkSync(this.ownerFile);
    } catch {
      // never written
    }
  }
}
