// List-and-watch for the file backend. One DirectoryMonitor per store drives every watch: fs.watch
// reports changed filenames (cheap, targeted re-reads) and a bounded poll re-lists the directory,
// because fs.watch can miss events and lease expiry changes no file. Each watch diffs what it last
// reported against what is live now, so renewals are silent and every change is delivered once.
import { watch as fsWatch, type FSWatcher } from "node:fs";
import { stat } from "node:fs/promises";
import { basename } from "node:path";
import { KvcrError } from "../lib/errors.ts";
import { isRecordFileName } from "./file-names.ts";
import type { ReadResult, RecordFiles } from "./file-io.ts";
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

/** Reads the records among `names` under `prefix` (bounded concurrency), collecting expired ones. */
export async function observe(ctx: ScanContext, names: readonly string[], prefix: string): Promise<Observation[]> {
  const targets: { name: string; key: string }[] = [];
  for (const name of names) {
    const key = ctx.files.keyOf(name);
    if (key !== undefined && key.startsWith(prefix)) targets.push({ name, key });
  }
  const out = new Array<Observation>(targets.length);
  let next = 0;
  // A fixed pool of lanes rather than batches: one slow file does not stall a whole batch.
  const lane = async () => {
    for (let i = next++; i < targets.length; i = next++) {
      const t = targets[i] as { name: string; key: string };
      const read = await ctx.files.read(t.name, t.key);
      const collected = await ctx.files.collectIfExpired(t.name, read, Date.now(), ctx.gcGraceMs);
      out[i] = { ...t, read: collected ? { kind: "missing" } : read };
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

  constructor(
    readonly prefix: string,
    private readonly listener: DiscoveryListener,
    private readonly monitor: DirectoryMonitor,
    private readonly logger: DiscoveryLogger,
  ) {}

  /** Applies observations; `complete` means they cover every file under the prefix. */
  apply(observations: readonly Observation[], complete: boolean): void {
    if (this.closed) return;
    const nowMs = Date.now();
    const seen = new Set<string>();
    const sorted = complete ? [...observations].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0)) : observations;
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
    if (complete) for (const key of [...this.reported.keys()]) if (!seen.has(key)) this.drop(key, "removed");
    this.initialized = true;
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
  private lastScanError: unknown;
  private lastScanWarning: string | undefined;
  /** Identity (inode + birth time: inodes get reused at once) of the dir fs.watch was started on. */
  private watchedDirId: string | undefined;

  constructor(private readonly opts: MonitorOptions) {}

  async add(prefix: string, listener: DiscoveryListener): Promise<DiscoveryWatch> {
    const w = new PrefixWatch(prefix, listener, this, this.opts.logger);
    this.watches.add(w);
    this.start();
    // The initial list is delivered before watch() resolves; loop in case a pump already running
    // had snapshotted the watch set before this one joined.
    while (!w.initialized && !w.closed) {
      this.fullScanDue = true;
      this.lastScanError = undefined;
      await this.kick();
      if (!w.initialized && this.lastScanError !== undefined) {
        const err = this.lastScanError;
        await w.close();
        throw new KvcrError("DISCOVERY_UNAVAILABLE", `cannot watch discovery dir ${this.opts.files.dir}: ${(err as Error).message}`, { cause: err });
      }
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
    this.pump ??= this.drain().finally(() => {
      this.pump = undefined;
    });
    return this.pump;
  }

  private async drain(): Promise<void> {
    while ((this.fullScanDue || this.pendingNames.size > 0) && this.watches.size > 0) {
      try {
        if (this.fullScanDue) await this.fullScan();
        else await this.targetedScan();
      } catch (err) {
        this.lastScanError = err;
        const message = `discovery: scanning ${this.opts.files.dir} failed: ${(err as Error).message}`;
        if (message !== this.lastScanWarning) this.opts.logger.warn(message); // once, not every tick
        this.lastScanWarning = message;
        return; // the next poll tick retries
      }
    }
    this.lastScanWarning = undefined;
  }

  private async fullScan(): Promise<void> {
    this.fullScanDue = false;
    this.pendingNames.clear(); // covered by this listing; names reported from now on are newer
    await this.checkFsWatchTarget();
    const names = await this.opts.files.listNames();
    this.opts.files.retainOnly(new Set(names));
    await this.opts.files.sweepStaleTemps(names, Date.now());
    for (const w of [...this.watches]) w.apply(await observe(this.opts, names, w.prefix), true);
  }

  /** inotify follows the inode, so a watch on a removed dir goes quiet; restart it on a new one. */
  private async checkFsWatchTarget(): Promise<void> {
    if (!this.opts.useFsWatch) return;
    const dirId = await stat(this.opts.files.dir).then((st) => `${st.ino}:${st.birthtimeMs}`, () => undefined);
    if (this.fsWatcher && dirId !== this.watchedDirId) {
      this.fsWatcher.close();
      this.fsWatcher = undefined;
    }
    if (!this.fsWatcher && dirId !== undefined && this.watches.size > 0) this.startFsWatch(dirId);
  }

  private async targetedScan(): Promise<void> {
    const names = [...this.pendingNames];
    this.pendingNames.clear();
    for (const w of [...this.watches]) {
      // Until its initial list is out, a watch only takes complete scans (keeps that list sorted).
      if (w.initialized) w.apply(await observe(this.opts, names, w.prefix), false);
    }
  }
}
