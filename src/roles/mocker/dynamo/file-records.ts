// Dynamo's file discovery backend, writer side: one flat file per key under DYN_FILE_KV/<bucket>,
// written as a `.tmp_` file then linked into place (watchers ignore the temp name), its mtime
// touched every ~3 s (Dynamo's TTL is 10 s and any process deletes older files), removed at close
// in reverse order. Records a dead process left behind (a kill -9) are removed at start instead of
// waiting out the TTL: each process lists its files under `.kvcr-owners/` beside its pid.
import { existsSync, linkSync, mkdirSync, readdirSync, readFileSync, renameSync, unlinkSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { keyFileName } from "../../../protocol/dynamo/discovery-records.ts";
import type { Logger } from "../../../lib/logger.ts";

export const KEEPALIVE_MS = 3_000;

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** Where a Dynamo-runtime process writes its records: Dynamo's file store or its etcd layout. */
export interface DynamoRecords extends AsyncDisposable {
  put(bucket: string, key: string, value: unknown): Promise<void>;
  /** Every record of `bucket` whose key starts with `prefix`, anyone's, as its JSON text. */
  list(bucket: string, prefix: string): Promise<{ key: string; text: string }[]>;
  /** Removes a record, anyone's (one a previous incarnation left); absent is no error. */
  remove(bucket: string, key: string): Promise<void>;
  /** Every key (file path or etcd key) this process wrote. */
  readonly keys: readonly string[];
}

export class DynamoFileRecords implements DynamoRecords {
  private readonly owned: string[] = [];
  private readonly timer: ReturnType<typeof setInterval>;
  private readonly ownerFile: string;

  constructor(
    private readonly root: string,
    /** What kind of process this is (endpoint and model): a restart cleans up dead ones of its kind. */
    ownerTag: string,
    private readonly logger: Logger,
    pid = process.pid,
  ) {
    const owners = join(root, ".kvcr-owners");
    mkdirSync(owners, { recursive: true });
    this.removeDeadOwners(owners, `${keyFileName(ownerTag)}.`);
    this.ownerFile = join(owners, `${keyFileName(ownerTag)}.${pid}`);
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
    if (this.owned.includes(path)) return; // a record put again: already listed
    this.owned.push(path);
    writeFileSync(this.ownerFile, this.owned.join("\n"));
  }

  async list(bucket: string, prefix: string): Promise<{ key: string; text: string }[]> {
    const dir = join(this.root, bucket);
    const out: { key: string; text: string }[] = [];
    for (const name of existsSync(dir) ? readdirSync(dir) : []) {
      if (name.startsWith(".tmp_")) continue;
      const key = decodeURIComponent(name);
      if (!key.startsWith(prefix)) continue;
      try {
        const text = readFileSync(join(dir, name), "utf8");
        if (text !== "") out.push({ key, text });
      } catch {
        // removed meanwhile
      }
    }
    return out;
  }

  async remove(bucket: string, key: string): Promise<void> {
    const path = join(this.root, bucket, keyFileName(key));
    try {
      unlinkSync(path);
    } catch {
      // already gone
    }
    const at = this.owned.indexOf(path);
    if (at >= 0) {
      this.owned.splice(at, 1);
      writeFileSync(this.ownerFile, this.owned.join("\n"));
    }
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

  /** Owner lists of processes of this kind that are gone: their records go too. */
  private removeDeadOwners(dir: string, prefix: string): void {
    for (const name of readdirSync(dir)) {
      if (!name.startsWith(prefix)) continue;
      const pid = Number(name.slice(prefix.length));
      if (!Number.isInteger(pid) || pidAlive(pid)) continue;
      const file = join(dir, name);
      const stale = readFileSync(file, "utf8").split("\n").filter(Boolean);
      for (const path of stale.reverse()) {
        try {
          unlinkSync(path);
        } catch {
          // already expired and removed by another process
        }
      }
      if (stale.length > 0) this.logger.info(`removed ${stale.length} discovery record(s) that process ${pid} left behind`);
      unlinkSync(file);
    }
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
