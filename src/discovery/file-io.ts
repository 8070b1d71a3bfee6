// Filesystem side of the file backend: atomic record writes (temp file + rename in the same dir),
// cached reads keyed by stat signature, lease-expiry garbage collection and stale temp sweeping.
// Unreadable or malformed files are reported once per version with the file's path, never thrown.
import { mkdir, readdir, readFile, rename, stat, unlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileNameToKey, isRecordFileName, TEMP_PREFIX } from "./file-names.ts";
import { parseRecord, type RecordEnvelope } from "./file-record.ts";
import type { DiscoveryLogger } from "./store.ts";

/** Records are small JSON documents; anything larger is not ours (or is broken). */
export const MAX_RECORD_BYTES = 8 * 1024 * 1024;
/** A temp file older than this was left by a writer that died mid-write. */
export const STALE_TEMP_MS = 60_000;
/**
 * A cached read is trusted only if the file's mtime was this far before the read: filesystem
 * timestamps are coarse (ms or jiffies) and inode numbers get reused, so two writes inside one
 * tick could share a signature (git's "racily clean" problem).
 */
const RACY_WINDOW_MS = 50;

export type ReadResult =
  | { kind: "missing" }
  | { kind: "record"; record: RecordEnvelope; sig: string }
  | { kind: "invalid"; sig: string };

interface CacheEntry {
  sig: string;
  mtimeMs: number;
  readAtMs: number;
  result: ReadResult;
}

export class RecordFiles {
  private readonly cache = new Map<string, CacheEntry>();
  /** Decoded filename → key (undefined: not a record name); decoding is most of a cached scan. */
  private readonly names = new Map<string, string | undefined>();
  private tempSeq = 0;

  constructor(
    readonly dir: string,
    private readonly logger: DiscoveryLogger,
  ) {}

  pathOf(name: string): string {
    return join(this.dir, name);
  }

  /** Every entry in the directory (a missing directory reads as empty: nothing registered yet). */
  async listNames(): Promise<string[]> {
    try {
      return await readdir(this.dir);
    } catch (err) {
      if (errCode(err) === "ENOENT") return [];
      throw err;
    }
  }

  /** Drops cached reads of files no longer in the directory (call with a full listing). */
  retainOnly(names: ReadonlySet<string>): void {
    for (const name of this.cache.keys()) if (!names.has(name)) this.cache.delete(name);
    for (const name of this.names.keys()) if (!names.has(name)) this.names.delete(name);
  }

  /** The key a directory entry stands for, or undefined for temp/foreign/non-canonical names. */
  keyOf(name: string): string | undefined {
    if (this.names.has(name)) return this.names.get(name);
    const key = isRecordFileName(name) ? fileNameToKey(name) : undefined;
    this.names.set(name, key);
    return key;
  }

  /** Reads and validates one record file; re-reads only when its stat signature changed. */
  async read(name: string, key: string): Promise<ReadResult> {
    const path = this.pathOf(name);
    let sig: string;
    let mtimeMs: number;
    let size: bigint;
    try {
      const st = await stat(path, { bigint: true });
      sig = `${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}`;
      mtimeMs = Number(st.mtimeNs / 1_000_000n);
      size = st.size;
    } catch (err) {
      return this.readFailed(name, path, err);
    }
    const cached = this.cache.get(name);
    if (cached && cached.sig === sig && cached.readAtMs - cached.mtimeMs > RACY_WINDOW_MS) return cached.result;

    const readAtMs = Date.now();
    let result: ReadResult;
    if (size > BigInt(MAX_RECORD_BYTES)) {
      result = { kind: "invalid", sig };
      if (cached?.sig !== sig) this.logger.warn(`discovery: skipping record file ${path}: ${size} bytes is larger than ${MAX_RECORD_BYTES}`);
    } else {
      let text: string;
      try {
        text = await readFile(path, "utf8");
      } catch (err) {
        return this.readFailed(name, path, err);
      }
      const parsed = parseRecord(text, key);
      if (parsed.ok) {
        result = { kind: "record", record: parsed.record, sig };
      } else {
        result = { kind: "invalid", sig };
        // Warn once per version of the file, not on every poll.
        if (cached?.sig !== sig) this.logger.warn(`discovery: skipping malformed record file ${path}: ${parsed.problem}`);
      }
    }
    this.cache.set(name, { sig, mtimeMs, readAtMs, result });
    return result;
  }

  private readFailed(name: string, path: string, err: unknown): ReadResult {
    const code = errCode(err);
    if (code === "ENOENT") {
      this.cache.delete(name); // vanished between readdir and read: withdrawn or collected
      return { kind: "missing" };
    }
    const sig = `error:${code ?? String(err)}`;
    if (this.cache.get(name)?.sig !== sig) {
      this.logger.warn(`discovery: skipping unreadable record file ${path}: ${(err as Error).message ?? String(err)}`);
    }
    const result: ReadResult = { kind: "invalid", sig };
    this.cache.set(name, { sig, mtimeMs: 0, readAtMs: 0, result });
    return result;
  }

  /**
   * Deletes a record whose lease lapsed more than `graceMs` ago, unless the file changed since it
   * was read (its owner renewed it in the meantime). Returns whether it was deleted.
   */
  async collectIfExpired(name: string, read: ReadResult, nowMs: number, graceMs: number): Promise<boolean> {
    if (read.kind !== "record" || nowMs <= read.record.leaseExpiresAtMs + graceMs) return false;
    const path = this.pathOf(name);
    try {
      const st = await stat(path, { bigint: true });
      if (`${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}` !== read.sig) return false;
      await unlink(path);
    } catch (err) {
      if (errCode(err) === "ENOENT") return false; // someone else collected it first
      this.logger.warn(`discovery: could not remove expired record file ${path}: ${(err as Error).message}`);
      return false;
    }
    this.cache.delete(name);
    this.logger.debug(`discovery: collected expired record ${read.record.key} (owner pid ${read.record.owner.pid})`);
    return true;
  }

  /** Writes `text` as `name` atomically: readers see the old or the new file, never a mix. */
  async writeAtomic(name: string, text: string, ownerTag: string): Promise<void> {
    const temp = this.pathOf(`${TEMP_PREFIX}${ownerTag}-${++this.tempSeq}`);
    try {
      try {
        await writeFile(temp, text, { mode: 0o600 });
      } catch (err) {
        if (errCode(err) !== "ENOENT") throw err;
        await mkdir(this.dir, { recursive: true, mode: 0o700 }); // directory removed under us
        await writeFile(temp, text, { mode: 0o600 });
      }
      await rename(temp, this.pathOf(name));
    } catch (err) {
      await unlink(temp).catch(() => {});
      throw err;
    }
  }

  /** Deletes `name` if it still holds a record owned by `instanceId` (never someone else's). */
  async removeIfOwned(name: string, key: string, instanceId: string): Promise<void> {
    const read = await this.read(name, key);
    if (read.kind !== "record" || read.record.owner.instanceId !== instanceId) return;
    try {
      await unlink(this.pathOf(name));
    } catch (err) {
      if (errCode(err) !== "ENOENT") throw err;
    }
    this.cache.delete(name);
  }

  /** Removes temp files left behind by writers that died between write and rename. */
  async sweepStaleTemps(names: readonly string[], nowMs: number): Promise<void> {
    for (const name of names) {
      if (!name.startsWith(TEMP_PREFIX)) continue;
      const path = this.pathOf(name);
      try {
        const st = await stat(path);
        if (nowMs - st.mtimeMs > STALE_TEMP_MS) await unlink(path);
      } catch {
        // gone already (renamed into place or swept by another process)
      }
    }
  }
}

export function errCode(err: unknown): string | undefined {
  return typeof err === "object" && err !== null && "code" in err ? String((err as { code: unknown }).code) : undefined;
}
