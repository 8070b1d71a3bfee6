// Generic test helpers: wait on a condition with a bounded timeout, scratch temp dirs, child bun
// processes that are always killed, per-test cleanups. Tests wait on conditions, never on fixed sleeps.
import { afterEach } from "bun:test";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { LineQueue } from "./lines.ts";

export interface WaitForOptions {
  timeoutMs?: number;
  /** How often the predicate is re-evaluated. */
  intervalMs?: number;
  /** Says what was awaited, for the timeout message. */
  what?: string;
}

/**
 * Resolves with the predicate's first truthy result; rejects after `timeoutMs` with a message
 * naming what was awaited (and the predicate's last error, if it threw).
 */
export async function waitFor<T>(
  predicate: () => T | Promise<T>,
  opts: WaitForOptions = {},
): Promise<NonNullable<T>> {
  const timeoutMs = opts.timeoutMs ?? 5_000;
  const intervalMs = opts.intervalMs ?? 10;
  const deadline = performance.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await predicate();
      if (value) return value as NonNullable<T>;
    } catch (err) {
      lastError = err;
    }
    if (performance.now() >= deadline) {
      const cause = lastError instanceof Error ? ` (last error: ${lastError.message})` : "";
      throw new Error(`waitFor timed out after ${timeoutMs} ms waiting for ${opts.what ?? "condition"}${cause}`);
    }
    await Bun.sleep(intervalMs);
  }
}

/** Rejects if `promise` does not settle within `timeoutMs`; the timer never outlives the call. */
export async function withTimeout<T>(promise: Promise<T>, timeoutMs: number, what = "operation"): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not finish within ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Registers an afterEach that runs what the test pushed onto the returned list, last first, so
 * every socket and process a test opened is closed also when the test failed.
 */
export function cleanupList(): (() => unknown)[] {
  const cleanups: (() => unknown)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });
  return cleanups;
}

/**
 * The error `fn` throws, which must be a `type` (so its fields can be asserted on); fails with a
 * message saying what was thrown instead, or that nothing was.
 */
export function thrownBy<E extends Error>(type: abstract new (...args: never[]) => E, fn: () => unknown): E {
  try {
    fn();
  } catch (err) {
    if (err instanceof type) return err;
    throw new Error(`expected ${type.name}, got ${String(err)}`, { cause: err });
  }
  throw new Error(`expected ${type.name}, but nothing was thrown`);
}

export interface TempDir extends AsyncDisposable {
  readonly path: string;
}

/** A fresh directory under the OS temp dir, removed (recursively) on dispose. */
export async function makeTempDir(prefix = "kvcr-test-"): Promise<TempDir> {
  const path = await mkdtemp(join(tmpdir(), prefix));
  return {
    path,
    async [Symbol.asyncDispose]() {
      await rm(path, { recursive: true, force: true });
    },
  };
}

export interface ChildProcess extends AsyncDisposable {
  readonly proc: Bun.Subprocess<"ignore" | "pipe", "pipe", "pipe">;
  /** Resolves with the first stdout line not returned before that satisfies `match`. */
  readLine(match: (line: string) => boolean, timeoutMs?: number): Promise<string>;
  /** Resolves with the first stderr line not returned before that satisfies `match`. */
  readErrLine(match: (line: string) => boolean, timeoutMs?: number): Promise<string>;
  /** Everything the child wrote to stderr so far (for failure messages). */
  stderrText(): string;
  /** Everything the child wrote to stdout so far. */
  stdoutText(): string;
}

/** The environment every spawned test process gets: no colours, no lifeline inherited from a parent `up`. */
export function testEnv(extra: Record<string, string> = {}): Record<string, string | undefined> {
  const { KVCR_LIFELINE: _lifeline, ...env } = process.env;
  return { ...env, NO_COLOR: "1", ...extra };
}

/**
 * The one spawn helper for tests: `argv` in its own process group with piped output and a
 * normalised environment (testEnv). Dispose SIGKILLs the whole group if the child still runs and
 * waits for it to exit, so a failing test leaves no process behind.
 */
export function spawnProcess(argv: readonly string[], opts: { env?: Record<string, string>; cwd?: string; stdin?: "ignore" | "pipe" } = {}): ChildProcess {
  const proc = Bun.spawn([...argv], {
    stdin: opts.stdin ?? "ignore",
    stdout: "pipe",
    stderr: "pipe",
    cwd: opts.cwd,
    detached: true,
    env: testEnv(opts.env),
  });
  const stdout = new LineQueue(proc.stdout);
  const stderr = new LineQueue(proc.stderr);
  const text = (q: LineQueue) => q.lines.map((l) => `${l}\n`).join("");
  const name = argv.slice(0, 3).join(" ");
  return {
    proc,
    readLine: (match, timeoutMs = 10_000) => stdout.next(match, timeoutMs, () => `the awaited stdout line of ${name} (its stderr so far:\n${text(stderr)})`),
    readErrLine: (match, timeoutMs = 10_000) => stderr.next(match, timeoutMs, () => `the awaited stderr line of ${name} (its stderr so far:\n${text(stderr)})`),
    stderrText: () => text(stderr),
    stdoutText: () => text(stdout),
    async [Symbol.asyncDispose]() {
      if (proc.exitCode === null && proc.signalCode === null) {
        try {
          process.kill(-proc.pid, "SIGKILL");
        } catch {
          proc.kill("SIGKILL");
        }
      }
      await proc.exited;
    },
  };
}

/** Spawns `bun <script> ...args` through spawnProcess. */
export function spawnBun(script: string, args: readonly string[] = [], env?: Record<string, string>): ChildProcess {
  return spawnProcess([process.execPath, script, ...args], { env });
}

/** Whether `pid` is a live process (a zombie awaiting its reaper counts as gone). */
export function pidAlive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z";
  } catch {
    try {
      process.kill(pid, 0);
      return process.platform !== "linux"; // no /proc entry on Linux: gone
    } catch {
      return false;
    }
  }
}

export const REPO_ROOT = resolve(import.meta.dir, "..");
/** Vectors and traces shipped in the repo (copies of ../shared, checked by test/fixtures.test.ts). */
export const FIXTURES_DIR = resolve(REPO_ROOT, "test/fixtures");
export const CLI_ENTRY = resolve(REPO_ROOT, "src/cli.ts");

/** A synchronous temp dir for `using` (removed on dispose). */
export function tempDir(prefix = "kvcr-test-"): { path: string; [Symbol.dispose](): void } {
  const path = mkdtempSync(join(tmpdir(), prefix));
  return { path, [Symbol.dispose]: () => rmSync(path, { recursive: true, force: true }) };
}

export interface RunResult {
  exitCode: number;
  stdout: string;
  stderr: string;
}

/** Runs the CLI from source (or a given binary) to completion, killed after a bounded timeout. */
export async function runCli(
  args: string[],
  opts: { bin?: string; env?: Record<string, string>; timeoutMs?: number; cwd?: string; stdin?: string } = {},
): Promise<RunResult> {
  const cmd = opts.bin ? [opts.bin, ...args] : [process.execPath, CLI_ENTRY, ...args];
  const proc = Bun.spawn(cmd, {
    stdout: "pipe",
    stderr: "pipe",
    stdin: opts.stdin !== undefined ? new TextEncoder().encode(opts.stdin) : "ignore",
    cwd: opts.cwd,
    env: { ...process.env, NO_COLOR: "1", ...opts.env },
    timeout: opts.timeoutMs ?? 30_000,
    killSignal: "SIGKILL",
  });
  const [stdout, stderr, exitCode] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { exitCode, stdout, stderr };
}
