// A `kvcr-mock mocker` child process for bench/ scripts, started through the real CLI with its own
// temp discovery dir: finds its HTTP URL from its discovery worker records, waits for /health, reads
// its RSS from /proc and its Prometheus counters, and stops it with SIGTERM (by its pid) on dispose.
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { dirname, join } from "node:path";
import { defaultDiscoveryDir, openFileDiscoveryStore, type FileDiscoveryStore } from "../../src/discovery/file-store.ts";
import { keys } from "../../src/discovery/keys.ts";
import type { WorkerRecord } from "../../src/protocol/records.ts";

const CLI = new URL("../../src/cli.ts", import.meta.url).pathname;
const NAMESPACE = "bench";
/** USER_HZ: /proc times are in these ticks (100 on every Linux architecture Bun runs on). */
const CLOCK_TICKS_PER_S = 100;
const quiet = { warn: (m: string) => console.error(m), debug: () => {} };

export class MockerChild implements AsyncDisposable {
  httpUrl = "";
  private constructor(
    readonly proc: Bun.Subprocess<"ignore", "inherit", "inherit">,
    readonly discoveryDir: string,
    readonly store: FileDiscoveryStore,
    readonly spawnedAtMs: number,
  ) {}

  /** Spawns `kvcr-mock mocker <args>` (plus namespace, discovery dir, port 0, warn logging). */
  static async spawn(args: readonly string[]): Promise<MockerChild> {
    // Next to the default discovery dir (tmpfs on Linux), so registration costs what it does by default.
    const dir = await mkdtemp(join(dirname(defaultDiscoveryDir()), "kvcr-bench-mocker-"));
    const store = await openFileDiscoveryStore({ dir, logger: quiet, useFsWatch: false });
    const spawnedAtMs = performance.now();
    const proc = Bun.spawn([process.execPath, CLI, "mocker", "--namespace", NAMESPACE, "--discovery-dir", dir, "--http-port", "0", "--log-level", "warn", ...args], {
      stdin: "ignore",
      stdout: "inherit",
      stderr: "inherit",
    });
    return new MockerChild(proc, dir, store, spawnedAtMs);
  }

  get pid(): number {
    return this.proc.pid;
  }

  /** Worker records of this mocker visible in discovery (live leases only). */
  async workerRecords(): Promise<WorkerRecord[]> {
    const entries = await this.store.list(keys.kindPrefix(NAMESPACE, "worker"));
    return entries.map((e) => e.value as WorkerRecord);
  }

  /**
   * Waits for the first worker record (its request_url names the HTTP server), then for /health
   * 200. Returns ms from spawn to each. Polls: a bench may poll, a test must not assert on time.
   */
  async waitHealthy(timeoutMs: number): Promise<{ firstRecordMs: number; healthyMs: number }> {
    const deadline = performance.now() + timeoutMs;
    const check = (what: string) => {
      if (this.proc.exitCode !== null) throw new Error(`the mocker exited (code ${this.proc.exitCode}) while waiting for ${what}`);
      if (performance.now() > deadline) throw new Error(`the mocker did not report ${what} within ${timeoutMs} ms`);
    };
    let firstRecordMs = 0;
    for (;;) {
      check("a worker record");
      const records = await this.workerRecords();
      if (records.length > 0) {
        firstRecordMs = performance.now() - this.spawnedAtMs;
        this.httpUrl = records[0]!.request_url.replace(/\/v1\/generate$/, "");
        break;
      }
      await Bun.sleep(5);
    }
    for (;;) {
      check("/health 200");
      const res = await fetch(`${this.httpUrl}/health`).catch(() => undefined);
      if (res?.status === 200) break;
      await res?.body?.cancel();
      await Bun.sleep(5);
    }
    return { firstRecordMs, healthyMs: performance.now() - this.spawnedAtMs };
  }

  /** Resident set size of the mocker process (VmRSS), bytes. */
  async rssBytes(): Promise<number> {
    const status = await readFile(`/proc/${this.proc.pid}/status`, "utf8");
    const m = /^VmRSS:\s+(\d+)\s+kB$/m.exec(status);
    if (!m) throw new Error(`no VmRSS in /proc/${this.proc.pid}/status`);
    return Number(m[1]) * 1024;
  }

  /** CPU time (user + system) the mocker process has used so far, seconds. */
  async cpuSeconds(): Promise<number> {
    const stat = await readFile(`/proc/${this.proc.pid}/stat`, "utf8");
    // Fields after the parenthesised command name; utime and stime are the 14th and 15th overall.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS_PER_S;
  }

  /** Sum over all label sets of each named Prometheus sample family. */
  async metricSums(names: readonly string[]): Promise<Map<string, number>> {
    const res = await fetch(`${this.httpUrl}/metrics`);
    if (res.status !== 200) throw new Error(`/metrics answered ${res.status}`);
    const text = await res.text();
    const sums = new Map<string, number>(names.map((n) => [n, 0]));
    for (const line of text.split("\n")) {
      if (line.startsWith("#")) continue;
      const brace = line.indexOf("{");
      const name = line.slice(0, brace >= 0 ? brace : line.indexOf(" "));
      const sum = sums.get(name);
      if (sum !== undefined) sums.set(name, sum + Number(line.slice(line.lastIndexOf(" ") + 1)));
    }
    return sums;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    if (this.proc.exitCode === null) {
      this.proc.kill("SIGTERM");
      const exited = await Promise.race([this.proc.exited.then(() => true), Bun.sleep(10_000).then(() => false)]);
      if (!exited) {
        console.error(`mocker ${this.proc.pid} did not exit 10 s after SIGTERM; killing it`);
        this.proc.kill("SIGKILL");
        await this.proc.exited;
      }
    }
    await this.store.close();
    await rm(this.discoveryDir, { recursive: true, force: true });
  }
}
