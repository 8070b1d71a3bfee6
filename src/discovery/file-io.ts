// Filesystem side of the file backend: atomic writes (temp file + rename in the same dir), cached
// reads of records and process lease files keyed by stat signature, lease-expiry garbage collection
// and stale temp sweeping. Unreadable or malformed files are reported once per version with the
// file's path, never thrown.
import { mkdir, readdir, readFile, rename, stat, unlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileNameToKey, isRecordFileName, TEMP_PREFIX } from "./file-names.ts";
import { parseLease, parseRecord, type LeaseEnvelope, type RecordEnvelope } from "./file-record.ts";
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

export type LeaseRead =
  | { kind: "missing" }
  | { kind: "lease"; lease: LeaseEnvelope; sig: string }
  | { kind: "invalid"; sig: string };

interface CacheEntry<R> {
  sig: string;
  mtimeMs: number;
  readAtMs: number;
  result: R;
}

type Parsed<T> = { ok: true; value: T } | { ok: false; problem: string };

export class RecordFiles {
  private readonly cache = new Map<string, CacheEntry<ReadResult>>();
  private readonly leaseCache = new Map<string, CacheEntry<LeaseRead>>();
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

  /**
   * Which directory is at the path (inode + birth time: inodes get reused at once), or undefined
   * while there is none. A different one means the directory was removed and re-created, or swapped.
   */
  async dirIdentity(): Promise<string | undefined> {
    try {
      const st = await stat(this.dir);
      return `${st.ino}:${st.birthtimeMs}`;
    } catch {
      return undefined;
    }
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
    for (const name of this.leaseCache.keys()) if (!names.has(name)) this.leaseCache.delete(name);
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
  read(name: string, key: string): Promise<ReadResult> {
    return this.readCached<RecordEnvelope, ReadResult>(
      name,
      this.cache,
      (text) => {
        const p = parseRecord(text, key);
        return p.ok ? { ok: true, value: p.record } : p;
      },
      (record, sig) => ({ kind: "record", record, sig }),
      "record",
    );
  }

  /** Reads and validates one process lease file, cached the same way. */
  readLease(name: string): Promise<LeaseRead> {
    return this.readCached<LeaseEnvelope, LeaseRead>(
      name,
      this.leaseCache,
      (text) => {
        const p = parseLease(text);
        return p.ok ? { ok: true, value: p.lease } : p;
      },
      (lease, sig) => ({ kind: "lease", lease, sig }),
      "lease",
    );
  }

  private async readCached<T, R extends { kind: string }>(
    name: string,
    cache: Map<string, CacheEntry<R | { kind: "missing" } | { kind: "invalid"; sig: string }>>,
    parse: (text: string) => Parsed<T>,
    found: (value: T, sig: string) => R,
    what: string,
  ): Promise<R | { kind: "missing" } | { kind: "invalid"; sig: string }> {
    type Result = R | { kind: "missing" } | { kind: "invalid"; sig: string };
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
      return this.readFailed(name, path, err, cache, what);
    }
    const cached = cache.get(name);
    if (cached && cached.sig === sig && cached.readAtMs - cached.mtimeMs > RACY_WINDOW_MS) return cached.result;

    const readAtMs = Date.now();
    let result: Result;
    if (size > BigInt(MAX_RECORD_BYTES)) {
      result = { kind: "invalid", sig };
      if (cached?.sig !== sig) this.logger.warn(`discovery: skipping ${what} file ${path}: ${size} bytes is larger than ${MAX_RECORD_BYTES}`);
    } else {
      let text: string;
      try {
        text = await readFile(path, "utf8");
      } catch (err) {
        return this.readFailed(name, path, err, cache, what);
      }
      const parsed = parse(text);
      if (parsed.ok) {
        result = found(parsed.value, sig);
      } else {
        result = { kind: "invalid", sig };
        // Warn once per version of the file, not on every poll.
        if (cached?.sig !== sig) this.logger.warn(`discovery: skipping malformed ${what} file ${path}: ${parsed.problem}`);
      }
    }
    cache.set(name, { sig, mtimeMs, readAtMs, result });
    return result;
  }

  private readFailed<R>(name: string, path: string, err: unknown, cache: Map<string, CacheEntry<R | { kind: "invalid"; sig: string }>>, what: string): { kind: "missing" } | { kind: "invalid"; sig: string } {
    const code = errCode(err);
    if (code === "ENOENT") {
      cache.delete(name); // vanished between readdir and read: withdrawn or collected
      return { kind: "missing" };
    }
    const sig = `error:${code ?? String(err)}`;
    if ((cache.get(name)?.sig ?? "") !== sig) {
      this.logger.warn(`discovery: skipping unreadable ${what} file ${path}: ${(err as Error).message ?? String(err)}`);
    }
    const result = { kind: "invalid" as const, sig };
    cache.set(name, { sig, mtimeMs: 0, readAtMs: 0, result });
    return result;
  }

  /**
   * Deletes a record whose lease lapsed more than `graceMs` ago, unless the file changed since it
   * was read (its owner renewed it in the meantime). Returns whether it was deleted.
   */
  async collectIfExpired(name: string, read: ReadResult, nowMs: number, graceMs: number): Promise<boolean> {
    if (read.kind !== "record" || nowMs <= read.record.leaseExpiresAtMs + graceMs) return false;
    const collected = await this.removeIfUnchanged(name, read.sig, "record");
    if (collected) this.logger.debug(`discovery: collected expired record ${read.record.key} (owner pid ${read.record.owner.pid})`);
    return collected;
  }

  /** Deletes a process lease file that lapsed more than `graceMs` ago (its owner is gone or stalled). */
  async collectLeaseIfExpired(name: string, read: LeaseRead, nowMs: number, graceMs: number): Promise<boolean> {
    if (read.kind !== "lease" || nowMs <= read.lease.leaseExpiresAtMs + graceMs) return false;
    const collected = await this.removeIfUnchanged(name, read.sig, "lease");
    if (collected) this.logger.debug(`discovery: collected expired lease ${name} (owner pid ${read.lease.owner.pid})`);
    return collected;
  }

  /** Unlinks `name` unless it changed since it was read as `sig` (its owner renewed it meanwhile). */
  private async removeIfUnchanged(name: string, sig: string, what: string): Promise<boolean> {
    const path = this.pathOf(name);
    try {
      const st = await stat(path, { bigint: true });
      if (`${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}` !== sig) return false;
      await unlink(path);
    } catch (err) {
      if (errCode(err) === "ENOENT") return false; // someone else collected it first
      this.logger.warn(`discovery: could not remove expired ${what} file ${path}: ${(err as Error).message}`);
      return false;
    }
    this.cache.delete(name);
    this.leaseCache.delete(name);
    return true;
  }

  /** Whether `name` exists (a stat; any error but ENOENT counts as present, so nothing is rewritten blindly). */
  async exists(name: string): Promise<boolean> {
    try {
      await stat(this.pathOf(name));
      return true;
    } catch (err) {
      return errCode(err) !== "ENOENT";
    }
  }

  /** Deletes one of our own files (a lease file at close); a missing file is fine. */
  async remove(name: string): Promise<void> {
    try {
      await unlink(this.pathOf(name));
    } catch (err) {
      if (errCode(err) !== "ENOENT") throw err;
    }
    this.leaseCache.delete(name);
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
