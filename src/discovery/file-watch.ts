// List-and-watch for the file backend. One DirectoryMonitor per store drives every watch: fs.watch
// reports changed record filenames (cheap, targeted re-reads) and a bounded poll re-lists the
// directory, because fs.watch can miss events and lease expiry changes no file. A record lives
// as long as its owner's lease file (read once per scan per lease), or until its owner's pid is
// gone, whichever comes first; lease renewals wake nobody.
// Each watch diffs what it last reported against what is live now, so renewals are silent and
// every change is delivered once. A directory replaced under the watches (removed and re-created,
// or swapped: a different inode) is noticed by the next full scan, which is itself the re-list.
import { watch as fsWatch, type FSWatcher } from "node:fs";
import { basename } from "node:path";
import { KvcrError } from "../lib/errors.ts";
import { processAlive } from "../lib/process-alive.ts";
import { isLeaseFileName, isRecordFileName } from "./file-names.ts";
import type { LeaseRead, ReadResult, RecordFiles } from "./file-io.ts";
import { toEntry, type RecordEnvelope } from "./file-record.ts";
import { notifyListener } from "./notify-listener.ts";
import type { DeleteReason, DiscoveryEvent, DiscoveryListener, DiscoveryLogger, DiscoveryWatch } from "./store.ts";

/** Files read concurrently: bounds open descriptors with thousands of records. */
const READ_CONCURRENCY = 128;

export interface ScanContext {
  files: RecordFiles;
  logger: DiscoveryLogger;
  gcGraceMs: number;
}

export interface Observation {
  key: string;
  name: string;
  read: ReadResult;
}

/**
 * Lease file reads of one scan: each lease is read once however many records name it. A lease
 * whose owner process is gone (its pid does not exist) reads as lapsed long ago (expiry 0): its
 * records are dropped and collected on this scan rather than when the lease would lapse. That
 * costs one pid probe per lease file per scan, not one per record.
 */
export class LeaseReads {
  private readonly reads = new Map<string, Promise<LeaseRead>>();
  constructor(private readonly files: RecordFiles) {}

  get(name: string): Promise<LeaseRead> {
    let read = this.reads.get(name);
    if (!read) {
      read = this.files.readLease(name).then((lease) =>
        lease.kind === "lease" && ownerProcessGone(lease.lease.owner.pid) ? { ...lease, lease: { ...lease.lease, leaseExpiresAtMs: 0 } } : lease,
      );
      this.reads.set(name, read);
    }
    return read;
  }
}

/** Whether no process has this pid on this host; a reused pid reads as alive (the lease's own expiry then applies). */
export function ownerProcessGone(pid: number): boolean {
  return pid > 0 && pid !== process.pid && !processAlive(pid); // 0 is not a process (kill(0) means our group)
}

/**
 * A record's read with its lease's expiry filled in. A lease file that is gone (or belongs to
 * another owner) means the lease lapsed and was collected: expiry 0, so the record is collected
 * too. An unreadable lease file makes the record not live but never collected (it may be a passing
 * error).
 */
export async function withLease(read: ReadResult, leases: LeaseReads): Promise<ReadResult> {
  if (read.kind !== "record") return read;
  const lease = await leases.get(read.record.lease);
  if (lease.kind === "invalid") return { kind: "invalid", sig: read.sig };
  const expiresAtMs = lease.kind === "lease" && lease.lease.owner.instanceId === read.record.owner.instanceId ? lease.lease.leaseExpiresAtMs : 0;
  return { kind: "record", sig: read.sig, record: { ...read.record, leaseExpiresAtMs: expiresAtMs } };
}

/** Deletes the lease files among `names` that lapsed more than the grace period ago (records first: they are observed before). */
export async function collectExpiredLeases(ctx: ScanContext, names: readonly string[], leases: LeaseReads): Promise<void> {
  for (const name of names) {
    if (!isLeaseFileName(name)) continue;
    await ctx.files.collectLeaseIfExpired(name, await leases.get(name), Date.now(), ctx.gcGraceMs);
  }
}

/** Reads the records among `names` under `prefix` (bounded concurrency), collecting expired ones. */
export function observe(ctx: ScanContext, names: readonly string[], prefix: string, leases = new LeaseReads(ctx.files)): Promise<Observation[]> {
  return observeMatching(ctx, names, (key) => key.startsWith(prefix), leases);
}

/** Reads the records among `names` whose key passes `wanted`: one read per file however many watches want it. */
async function observeMatching(ctx: ScanContext, names: readonly string[], wanted: (key: string) => boolean, leases: LeaseReads): Promise<Observation[]> {
  const targets: { name: string; key: string }[] = [];
  for (const name of names) {
    const key = ctx.files.keyOf(name);
    if (key !== undefined && wanted(key)) targets.push({ name, key });
  }
  const out = new Array<Observation>(targets.length);
  let next = 0;
  // A fixed pool of lanes rather than batches: one slow file does not stall a whole batch.
  const lane = async () => {
    for (let i = next++; i < targets.length; i = next++) {
      const t = targets[i] as { name: string; key: string };
      const read = await withLease(await ctx.files.read(t.name, t.key), leases);
      // A collected record is still reported as the expired record it was read as: a watch that
      // had it drops it as "expired" (collected in the same scan as its expiry: a dead owner's).
      await ctx.files.collectIfExpired(t.name, read, Date.now(), ctx.gcGraceMs);
      out[i] = { ...t, read };
    }
  };
  await Promise.all(Array.from({ length: Math.min(READ_CONCURRENCY, targets.length) }, lane));
  return out;
}

/** The record if it is live at `nowMs`; expired, invalid and missing ones are not. */
export function liveRecord(read: ReadResult, nowMs: number): RecordEnvelope | undefined {
  return read.kind === "record" && read.record.leaseExpiresAtMs > nowMs ? read.record : undefined;
}

class PrefixWatch implements DiscoveryWatch {
  /** What this watch last reported per key: owner instance + revision identify a version. */
  private readonly reported = new Map<string, string>();
  initialized = false;
  closed = false;
  /** Settles once the initial list is out (or the watch closed): what watch() waits for. */
  readonly ready: Promise<void>;
  private settleReady!: (err?: unknown) => void;

  constructor(
    readonly prefix: string,
    private readonly listener: DiscoveryListener,
    private readonly monitor: DirectoryMonitor,
    private readonly logger: DiscoveryLogger,
  ) {
    this.ready = new Promise<void>((resolve, reject) => {
      this.settleReady = (err) => (err === undefined ? resolve() : reject(err));
    });
  }

  /** The initial list could not be taken: watch() fails with `err`. */
  failInit(err: unknown): void {
    if (!this.initialized) this.settleReady(err);
  }

  /**
   * Applies observations (any prefix: this watch takes its own); `complete` means they cover every
   * file in the directory. Only the initial list needs key order, so only it is sorted.
   */
  apply(observations: readonly Observation[], complete: boolean): void {
    if (this.closed) return;
    const nowMs = Date.now();
    const seen = new Set<string>();
    const mine = observations.filter((o) => o.key.startsWith(this.prefix));
    const sorted = complete && !this.initialized ? mine.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0)) : mine;
    for (const o of sorted) {
      seen.add(o.key);
      const record = liveRecord(o.read, nowMs);
      if (record) {
        const version = `${record.owner.instanceId}#${record.revision}`;
        if (this.reported.get(o.key) === version) continue;
        this.reported.set(o.key, version);
        this.emit({ type: "put", entry: toEntry(record) });
      } else {
        // Expired, gone, or turned unreadable (its lease can no longer be checked): not live.
        this.drop(o.key, o.read.kind === "record" ? "expired" : "removed");
      }
    }
    if (complete) {
      for (const key of [...this.reported.keys()]) if (!seen.has(key)) this.drop(key, "removed");
      this.initialized = true;
      this.settleReady();
    }
  }

  private drop(key: string, reason: DeleteReason): void {
    if (!this.reported.delete(key)) return;
    this.emit({ type: "delete", key, reason });
  }

  private emit(event: DiscoveryEvent): void {
    if (!this.closed) notifyListener(this.listener, event, this.prefix, this.logger);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.settleReady();
    await this.monitor.remove(this);
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }
}

export interface MonitorOptions extends ScanContext {
  pollIntervalMs: number;
  useFsWatch: boolean;
}

/** Runs the scans for every watch of one store; holds timers/fs watchers only while watches exist. */
export class DirectoryMonitor {
  private readonly watches = new Set<PrefixWatch>();
  private fsWatcher: FSWatcher | undefined;
  private pollTimer: ReturnType<typeof setInterval> | undefined;
  private fullScanDue = false;
  private readonly pendingNames = new Set<string>();
  private pump: Promise<void> | undefined;
  private lastScanWarning: string | undefined;
  /** Identity (inode + birth time: inodes get reused at once) of the dir fs.watch was started on. */
  private watchedDirId: string | undefined;
  /** Identity of the directory the watches last listed: another one means it was replaced. */
  private listedDirId: string | undefined;
  /** Watches listed again because the directory was replaced, for /metrics. */
  resyncs = 0;
  /** When the last full scan ended and how long it took (performance.now() ms): paces the poll. */
  private lastFullScanEnd = 0;
  private lastFullScanMs = 0;

  constructor(private readonly opts: MonitorOptions) {}

  async add(prefix: string, listener: DiscoveryListener): Promise<DiscoveryWatch> {
    const w = new PrefixWatch(prefix, listener, this, this.opts.logger);
    this.watches.add(w);
    this.start();
    // The initial list is delivered before watch() resolves. Wait for this watch's first complete
    // scan, not for the scan loop to go idle: while many records renew, fs.watch keeps it busy
    // indefinitely. A scan already running may have snapshotted the watch set before this one
    // joined; the full scan flagged here then runs right after it.
    this.fullScanDue = true;
    void this.kick();
    try {
      await w.ready;
    } catch (err) {
      await w.close();
      throw new KvcrError("DISCOVERY_UNAVAILABLE", `cannot watch discovery dir ${this.opts.files.dir}: ${(err as Error).message}`, { cause: err });
    }
    return w;
  }

  async remove(w: PrefixWatch): Promise<void> {
    this.watches.delete(w);
    if (this.watches.size === 0) {
      this.stop();
      await this.pump; // let an in-flight scan finish so close() leaves nothing running
    }
  }

  async closeAll(): Promise<void> {
    await Promise.all([...this.watches].map((w) => w.close()));
    this.stop();
    await this.pump;
  }

  private start(): void {
    if (this.pollTimer) return;
    this.pollTimer = setInterval(() => {
      // A full scan costs a stat per record; when it takes longer than the interval (thousands of
      // records), rest at least as long as it took, so polling stays under half the CPU and
      // fs.watch events and new watches' initial lists are not starved behind back-to-back scans.
      if (performance.now() - this.lastFullScanEnd < this.lastFullScanMs) return;
      this.fullScanDue = true; // each full scan also (re)starts fs.watch if it died or lost its dir
      void this.kick();
    }, this.opts.pollIntervalMs);
  }

  private startFsWatch(dirId: string): void {
    const dirName = basename(this.opts.files.dir);
    try {
      const watcher = fsWatch(this.opts.files.dir, { persistent: true }, (_event, name) => {
        if (typeof name === "string" && name.length > 0 && name !== dirName) {
          if (!isRecordFileName(name)) return; // temp files: their rename into place reports the record name
          this.pendingNames.add(name);
        } else {
          this.fullScanDue = true; // unnamed event, or the dir itself was removed/replaced
        }
        void this.kick();
      });
      watcher.on("error", (err) => {
        this.opts.logger.debug(`discovery: fs.watch on ${this.opts.files.dir} failed (${(err as Error).message}); polling until it can be re-established`);
        watcher.close();
        if (this.fsWatcher === watcher) this.fsWatcher = undefined;
      });
      this.fsWatcher = watcher;
      this.watchedDirId = dirId;
    } catch (err) {
      // Directory missing or watch unsupported here: the poll still covers every change.
      this.opts.logger.debug(`discovery: fs.watch unavailable on ${this.opts.files.dir}: ${(err as Error).message}`);
    }
  }

  private stop(): void {
    clearInterval(this.pollTimer);
    this.pollTimer = undefined;
    this.fsWatcher?.close();
    this.fsWatcher = undefined;
    this.pendingNames.clear();
  }

  /** Starts the scan loop if idle; resolves when it has drained all pending work. */
  private kick(): Promise<void> {
    this.pump ??= this.drain().then((failed) => {
      this.pump = undefined;
      // Work flagged after the loop's last check but before this ran (a watch() joining) would
      // otherwise wait for the next poll tick; after a failure the poll tick is the retry.
      if (!failed && this.watches.size > 0 && (this.fullScanDue || this.pendingNames.size > 0)) void this.kick();
    });
    return this.pump;
  }

  /** Scans until nothing is pending; resolves true if a scan failed (the next poll tick retries). */
  private async drain(): Promise<boolean> {
    while ((this.fullScanDue || this.pendingNames.size > 0) && this.watches.size > 0) {
      const full = this.fullScanDue;
      try {
        if (full) await this.fullScan();
        else await this.targetedScan();
      } catch (err) {
        // A watch() waiting for its initial list fails now rather than hang on a broken dir.
        if (full) for (const w of this.watches) w.failInit(err);
        const message = `discovery: scanning ${this.opts.files.dir} failed: ${(err as Error).message}`;
        if (message !== this.lastScanWarning) this.opts.logger.warn(message); // once, not every tick
        this.lastScanWarning = message;
        return true;
      }
    }
    this.lastScanWarning = undefined;
    return false;
  }

  private async fullScan(): Promise<void> {
    const t0 = performance.now();
    this.fullScanDue = false;
    this.pendingNames.clear(); // covered by this listing; names reported from now on are newer
    await this.checkDirectory();
    const names = await this.opts.files.listNames();
    this.opts.files.retainOnly(new Set(names));
    await this.opts.files.sweepStaleTemps(names, Date.now());
    const watches = [...this.watches];
    const leases = new LeaseReads(this.opts.files);
    const observations = await observeMatching(this.opts, names, (key) => watches.some((w) => key.startsWith(w.prefix)), leases);
    for (const w of watches) w.apply(observations, true);
    await collectExpiredLeases(this.opts, names, leases);
    this.lastFullScanEnd = performance.now();
    this.lastFullScanMs = this.lastFullScanEnd - t0;
  }

  /**
   * Notes a replaced directory (this full scan re-lists it for every watch: counted, WARN) and
   * restarts fs.watch on it: inotify follows the inode, so a watch on a removed dir goes quiet.
   */
  private async checkDirectory(): Promise<void> {
    const dirId = await this.opts.files.dirIdentity();
    if (dirId !== undefined) {
      const listed = [...this.watches].filter((w) => w.initialized).length;
      if (this.listedDirId !== undefined && dirId !== this.listedDirId && listed > 0) {
        this.opts.logger.warn(`discovery: directory ${this.opts.files.dir} was replaced (removed and re-created, or swapped); listing ${listed} watch(es) again`);
        this.resyncs += listed;
      }
      this.listedDirId = dirId;
    }
    if (!this.opts.useFsWatch) return;
    if (this.fsWatcher && dirId !== this.watchedDirId) {
      this.fsWatcher.close();
      this.fsWatcher = undefined;
    }
    if (!this.fsWatcher && dirId !== undefined && this.watches.size > 0) this.startFsWatch(dirId);
  }

  private async targetedScan(): Promise<void> {
    const names = [...this.pendingNames];
    this.pendingNames.clear();
    // Until its initial list is out, a watch only takes complete scans (keeps that list sorted).
    const watches = [...this.watches].filter((w) => w.initialized);
    if (watches.length === 0) return;
    const observations = await observeMatching(this.opts, names, (key) => watches.some((w) => key.startsWith(w.prefix)), new LeaseReads(this.opts.files));
    for (const w of watches) if (w.initialized) w.apply(observations, false);
  }
}
