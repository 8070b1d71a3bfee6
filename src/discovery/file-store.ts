// The `file` discovery backend (the default): a directory shared by the processes of one host,
// one JSON file per record, written once; each process renews one lease file (per TTL) that all
// its records name, as the etcd backend keeps one lease per process. Readers ignore records whose
// lease lapsed, or whose owner's pid no longer exists, and delete them. A directory replaced under
// the store is listed again by the watches and its records re-written by the lease. Options come
// from the config layer (--discovery-dir); defaults are safe per-user.
import { randomBytes } from "node:crypto";
import { statSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import { tmpdir, userInfo } from "node:os";
import { join } from "node:path";
import { ConfigError, KvcrError } from "../lib/errors.ts";
import { createLogger } from "../lib/logger.ts";
import { keyToFileName } from "./file-names.ts";
import { RecordFiles } from "./file-io.ts";
import { FileProcessLease } from "./file-lease.ts";
import { FileRecord } from "./file-leased-record.ts";
import { collectExpiredLeases, DirectoryMonitor, LeaseReads, liveRecord, observe } from "./file-watch.ts";
import { toEntry } from "./file-record.ts";
import { HeldRecords } from "./held-records.ts";
import { validateKey, validatePrefix } from "./keys.ts";
import type { DiscoveryEntry, DiscoveryListener, DiscoveryLogger, DiscoveryStatus, DiscoveryStore, DiscoveryWatch, LeasedRecord, PutOptions, RecordOwner } from "./store.ts";

export const FILE_DISCOVERY_DEFAULTS = {
  leaseTtlMs: 10_000,
  pollIntervalMs: 250,
  /** Extra time past expiry before a reader deletes a record, so a late-but-alive owner's
   *  renewal is not raced by the collector. Readers ignore the record from expiry on. */
  gcGraceMs: 1_000,
} as const;

export interface FileDiscoveryOptions {
  /** Shared directory; default `defaultDiscoveryDir()`. Created (mode 0700) if missing. */
  dir?: string;
  leaseTtlMs?: number;
  pollIntervalMs?: number;
  gcGraceMs?: number;
  /** fs.watch for prompt change delivery; the poll runs either way. Default true. */
  useFsWatch?: boolean;
  logger?: DiscoveryLogger;
}

/**
 * Per-user default dir: `/dev/shm/kvcr-mock-discovery-<uid>` on Linux (tmpfs: a renewal there costs
 * several times less CPU than on a disk filesystem, see bench/discovery-file.ts, and the path does
 * not depend on $TMPDIR, so every process of the host agrees on it), else
 * `${os.tmpdir()}/kvcr-mock-discovery-<uid>`.
 */
export function defaultDiscoveryDir(): string {
  let user: string;
  try {
    const info = userInfo();
    user = info.uid >= 0 ? String(info.uid) : info.username;
  } catch {
    user = "shared"; // no passwd entry (some containers): still one dir per host
  }
  return join(sharedMemoryDir() ?? tmpdir(), `kvcr-mock-discovery-${user}`);
}

function sharedMemoryDir(): string | undefined {
  if (process.platform !== "linux") return undefined;
  try {
    return statSync(SHM_DIR).isDirectory() ? SHM_DIR : undefined;
  } catch {
    return undefined;
  }
}
const SHM_DIR = "/dev/shm";

export async function openFileDiscoveryStore(options: FileDiscoveryOptions = {}): Promise<FileDiscoveryStore> {
  const leaseTtlMs = options.leaseTtlMs ?? FILE_DISCOVERY_DEFAULTS.leaseTtlMs;
  const pollIntervalMs = options.pollIntervalMs ?? FILE_DISCOVERY_DEFAULTS.pollIntervalMs;
  const gcGraceMs = options.gcGraceMs ?? FILE_DISCOVERY_DEFAULTS.gcGraceMs;
  const problems = [
    ...checkMs("leaseTtlMs", leaseTtlMs, 3),
    ...checkMs("pollIntervalMs", pollIntervalMs, 1),
    ...checkMs("gcGraceMs", gcGraceMs, 0),
  ];
  if (options.dir !== undefined && options.dir.length === 0) problems.push("discovery dir: must not be empty");
  if (problems.length > 0) throw new ConfigError(problems);
  const dir = options.dir ?? defaultDiscoveryDir();
  try {
    await mkdir(dir, { recursive: true, mode: 0o700 });
  } catch (err) {
    throw new KvcrError("DISCOVERY_UNAVAILABLE", `cannot create discovery dir ${dir}: ${(err as Error).message} (pass --discovery-dir with a writable directory)`, { cause: err });
  }
  const logger = options.logger ?? createLogger({ tag: "discovery" });
  return new FileDiscoveryStore(dir, { leaseTtlMs, pollIntervalMs, gcGraceMs, useFsWatch: options.useFsWatch ?? true, logger });
}

function checkMs(name: string, value: number, min: number): string[] {
  return Number.isFinite(value) && value >= min ? [] : [`discovery ${name}: ${value} is invalid; use a number of milliseconds >= ${min}`];
}

interface ResolvedOptions {
  leaseTtlMs: number;
  pollIntervalMs: number;
  gcGraceMs: number;
  useFsWatch: boolean;
  logger: DiscoveryLogger;
}

export class FileDiscoveryStore implements DiscoveryStore {
  readonly backend = "file";
  /** Identifies this store's records; also tags its temp files. */
  readonly owner: RecordOwner = { pid: process.pid, instanceId: randomBytes(8).toString("hex") };
  private readonly files: RecordFiles;
  private readonly monitor: DirectoryMonitor;
  private readonly records = new HeldRecords<FileRecord>();
  /** One lease per TTL (in practice one per process: every record uses the store's TTL). */
  private readonly leases = new Map<number, Promise<FileProcessLease>>();
  /** Lease repairs: records put back after readers may have dropped them. */
  private republishes = 0;
  private closed = false;

  constructor(
    readonly dir: string,
    private readonly opts: ResolvedOptions,
  ) {
    this.files = new RecordFiles(dir, opts.logger);
    this.monitor = new DirectoryMonitor({ files: this.files, logger: opts.logger, gcGraceMs: opts.gcGraceMs, pollIntervalMs: opts.pollIntervalMs, useFsWatch: opts.useFsWatch });
  }

  holdRenewals(untilMs: number): void {
    for (const lease of this.leases.values()) void lease.then((l) => void (l.heldUntilMs = untilMs), () => {});
  }

  async put(key: string, value: unknown, options: PutOptions = {}): Promise<LeasedRecord> {
    this.assertOpen();
    const fileName = keyToFileName(validateKey(key));
    const leaseTtlMs = options.leaseTtlMs ?? this.opts.leaseTtlMs;
    if (!Number.isFinite(leaseTtlMs) || leaseTtlMs < 3) {
      throw new KvcrError("DISCOVERY_LEASE_INVALID", `discovery record ${key}: leaseTtlMs ${leaseTtlMs} is invalid; use >= 3 ms`);
    }
    // A withdrawal still deleting this key's file must finish first, or it would delete the new
    // record (same owner id). Loop: another put may have taken the key while we waited.
    await this.records.claim(key);
    this.assertOpen();
    let lease: FileProcessLease;
    try {
      lease = await this.leaseFor(leaseTtlMs);
    } catch (err) {
      throw new KvcrError("DISCOVERY_WRITE_FAILED", `cannot write discovery record ${key} in ${this.dir}: ${(err as Error).message}`, { cause: err });
    }
    this.assertOpen(); // closed while the lease was written: close() has withdrawn everything already
    const record = new FileRecord(key, fileName, value, lease, {
      files: this.files,
      owner: this.owner,
      onWithdrawn: (r) => this.records.release(r),
    });
    return this.records.start(record, `cannot write discovery record ${key} in ${this.dir}`);
  }

  async list(prefix: string): Promise<DiscoveryEntry[]> {
    this.assertOpen();
    validatePrefix(prefix);
    const names = await this.files.listNames();
    this.files.retainOnly(new Set(names));
    const ctx = { files: this.files, logger: this.opts.logger, gcGraceMs: this.opts.gcGraceMs };
    const leases = new LeaseReads(this.files);
    const observations = await observe(ctx, names, prefix, leases);
    await collectExpiredLeases(ctx, names, leases);
    const nowMs = Date.now();
    const entries: DiscoveryEntry[] = [];
    for (const o of observations) {
      const record = liveRecord(o.read, nowMs);
      if (record) entries.push(toEntry(record));
    }
    return entries.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  }

  async watch(prefix: string, onChange: DiscoveryListener): Promise<DiscoveryWatch> {
    this.assertOpen();
    validatePrefix(prefix);
    return this.monitor.add(prefix, onChange);
  }

  /** Always connected (a directory); counts repairs as lease regrants and directory replacements as resyncs. */
  status(): DiscoveryStatus {
    return { backend: this.backend, connected: true, reconnects: 0, leaseRegrants: this.republishes, watchResyncs: this.monitor.resyncs };
  }

  /** Withdraws every record this store holds, closes every watch. Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    // Watches first: a closing process has no use for events about its own withdrawals.
    await this.monitor.closeAll();
    await this.records.withdrawAll(this.opts.logger);
    // Lease files last: a record outliving its lease file would read as lapsed meanwhile.
    const leases = await Promise.allSettled(this.leases.values());
    await Promise.all(leases.map((l) => (l.status === "fulfilled" ? l.value.close() : undefined)));
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  /** The lease file for `leaseTtlMs`, written before the first record that names it. */
  private leaseFor(leaseTtlMs: number): Promise<FileProcessLease> {
    let lease = this.leases.get(leaseTtlMs);
    if (!lease) {
      const l = new FileProcessLease(leaseTtlMs, { files: this.files, owner: this.owner, logger: this.opts.logger, onRepublish: () => void this.republishes++ });
      lease = l.start().then(() => l);
      this.leases.set(leaseTtlMs, lease);
      // A failed first write is forgotten, so the next put tries again.
      lease.catch(() => this.leases.delete(leaseTtlMs));
    }
    return lease;
  }

  private assertOpen(): void {
    if (this.closed) throw new KvcrError("DISCOVERY_CLOSED", "discovery store is closed");
  }
}
