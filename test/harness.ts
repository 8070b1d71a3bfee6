// Generic test helpers: wait on a condition with a bounded timeout, scratch temp dirs under one
// root per test process, child processes that are always killed (their whole process group),
// held ports, per-test cleanups. Tests wait on conditions, never on fixed sleeps, and every process
// a test starts goes through spawnChild here (test/architecture.test.ts checks that).
import { afterEach } from "bun:test";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { holdPort, type HeldPort } from "../src/transport/port-hold.ts";
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

const JANITOR = resolve(import.meta.dir, "janitor.ts");
let root: string | undefined;
let janitor: Bun.Subprocess<"pipe", "ignore", "ignore"> | undefined;

/**
 * This test process's own directory under the OS temp dir; every temp dir the harness makes is
 * inside it. `bun test` runs no exit handlers, so a janitor process (test/janitor.ts) removes it
 * when this process ends, however it ends, and kills the process groups of children still running.
 */
export function testTempRoot(): string {
  if (root !== undefined) return root;
  const dir = mkdtempSync(join(tmpdir(), `kvcr-test-${process.pid}-`));
  const j = Bun.spawn([process.execPath, JANITOR, dir], { stdin: "pipe", stdout: "ignore", stderr: "ignore", detached: true, env: testEnv() });
  // Neither the janitor nor the pipe to it may keep this process alive.
  j.unref();
  j.stdin.unref();
  [root, janitor] = [dir, j];
  return dir;
}

/**
 * Removes testTempRoot() now instead of a moment after this process exits (test/preload.ts calls
 * it after the whole run, so `npm test` leaves nothing behind even for an instant).
 */
export function removeTestTempRoot(): void {
  if (root !== undefined) rmSync(root, { recursive: true, force: true });
  root = undefined;
}

/** Tells the janitor about a child process group: "+" started, "-" gone. */
function tellJanitor(op: "+" | "-", pgid: number): void {
  if (janitor === undefined) testTempRoot();
  janitor!.stdin.write(`${op} ${pgid}\n`);
  janitor!.stdin.flush();
}

/**
 * A fresh directory with a short path whatever TMPDIR is (under /tmp), for what puts a Unix socket
 * in it (108 bytes at most for its whole path: Chromium's profile). Removed on dispose, or by the
 * janitor should this process die first.
 */
export async function makeShortTempDir(prefix = "kvcr-"): Promise<TempDir> {
  if (janitor === undefined) testTempRoot();
  const path = await mkdtemp(join("/tmp", prefix));
  janitor!.stdin.write(`d+ ${path}\n`);
  janitor!.stdin.flush();
  return {
    path,
    async [Symbol.asyncDispose]() {
      await rm(path, { recursive: true, force: true });
      janitor?.stdin.write(`d- ${path}\n`);
      janitor?.stdin.flush();
    },
  };
}

/** A fresh directory under testTempRoot(), removed (recursively) on dispose. */
export async function makeTempDir(prefix = "kvcr-test-"): Promise<TempDir> {
  const path = await mkdtemp(join(testTempRoot(), prefix));
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

/** The streams of a child as Bun.spawn takes them. */
type In = Bun.SpawnOptions.Writable;
type Out = Bun.SpawnOptions.Readable;

export interface SpawnOptions<I extends In, O extends Out, E extends Out> {
  /** Added to testEnv(). */
  env?: Record<string, string>;
  cwd?: string;
  /** Default "ignore". */
  stdin?: I;
  /** Default "pipe". */
  stdout?: O;
  /** Default "pipe". */
  stderr?: E;
}

export interface SpawnedChild<I extends In = "ignore", O extends Out = "pipe", E extends Out = "pipe"> extends AsyncDisposable {
  readonly proc: Bun.Subprocess<I, O, E>;
  /** SIGKILLs the child's whole process group (what dispose does, without waiting). */
  killGroup(): void;
}

/**
 * The one way a test starts a process: `argv` as the leader of its own process group, with a
 * normalised environment (testEnv) and stdin ignored unless asked. Dispose (`await using`, or a
 * cleanupList entry) SIGKILLs the whole group, so nothing the child started survives it either,
 * and waits for the child to exit; should the test process die first, the janitor kills the group.
 */
export function spawnChild<const I extends In = "ignore", const O extends Out = "pipe", const E extends Out = "pipe">(
  argv: readonly string[],
  opts: SpawnOptions<I, O, E> = {},
): SpawnedChild<I, O, E> {
  const proc = Bun.spawn([...argv], {
    stdin: opts.stdin ?? "ignore",
    stdout: opts.stdout ?? "pipe",
    stderr: opts.stderr ?? "pipe",
    cwd: opts.cwd,
    detached: true,
    env: testEnv(opts.env),
  }) as unknown as Bun.Subprocess<I, O, E>;
  const pgid = proc.pid;
  tellJanitor("+", pgid);
  let disposed = false;
  const killGroup = () => {
    if (disposed) return;
    try {
      // Also when the leader has exited: what it started in its group may still run.
      process.kill(-pgid, "SIGKILL");
    } catch {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill("SIGKILL");
    }
  };
  return {
    proc,
    killGroup,
    async [Symbol.asyncDispose]() {
      killGroup();
      disposed = true;
      await proc.exited;
      tellJanitor("-", pgid);
    },
  };
}

/** Hands a piped child's stdout and stderr text to `sink` as it comes (for an error naming why it exited). */
export function pipeOutput(child: SpawnedChild, sink: (text: string) => void): void {
  for (const s of [child.proc.stdout, child.proc.stderr]) {
    void (async () => {
      const d = new TextDecoder();
      for await (const c of s) sink(d.decode(c, { stream: true }));
    })();
  }
}

/**
 * A child with piped output read line by line (spawnChild underneath): what most tests start.
 * Dispose SIGKILLs the whole group and waits for the child's exit.
 */
export function spawnProcess(argv: readonly string[], opts: { env?: Record<string, string>; cwd?: string; stdin?: "ignore" | "pipe" } = {}): ChildProcess {
  const child = spawnChild(argv, { env: opts.env, cwd: opts.cwd, stdin: opts.stdin ?? "ignore" });
  const proc = child.proc as Bun.Subprocess<"ignore" | "pipe", "pipe", "pipe">;
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
    [Symbol.asyncDispose]: () => child[Symbol.asyncDispose](),
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

/** Waits until every pid is gone (a stopped stack's processes), naming the ones still alive. */
export function allGone(pids: readonly number[]): Promise<unknown> {
  return waitFor(() => pids.every((p) => !pidAlive(p)), { timeoutMs: 15_000, what: `pids ${pids.join(", ")} to be gone (alive: ${pids.filter(pidAlive).join(", ")})` });
}

export const REPO_ROOT = resolve(import.meta.dir, "..");
/** Vectors and traces shipped in the repo (copies of ../shared, checked by test/fixtures.test.ts). */
export const FIXTURES_DIR = resolve(REPO_ROOT, "test/fixtures");
export const CLI_ENTRY = resolve(REPO_ROOT, "src/cli.ts");

/** A synchronous temp dir under testTempRoot() for `using` (removed on dispose). */
export function tempDir(prefix = "kvcr-test-"): { path: string; [Symbol.dispose](): void } {
  const path = mkdtempSync(join(testTempRoot(), prefix));
  return { path, [Symbol.dispose]: () => rmSync(path, { recursive: true, force: true }) };
}

export interface RunResult {
  exitCode: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs the CLI from source (or a given binary) to completion through spawnChild; after `timeoutMs`
 * (default 30 s) its whole process group is SIGKILLed and the result is what it printed so far.
 */
export async function runCli(
  args: string[],
  opts: { bin?: string; env?: Record<string, string>; timeoutMs?: number; cwd?: string; stdin?: string } = {},
): Promise<RunResult> {
  const cmd = opts.bin ? [opts.bin, ...args] : [process.execPath, CLI_ENTRY, ...args];
  await using child = spawnChild(cmd, {
    stdin: opts.stdin !== undefined ? new TextEncoder().encode(opts.stdin) : "ignore",
    cwd: opts.cwd,
    env: opts.env,
  });
  const { proc } = child;
  const timer = setTimeout(child.killGroup, opts.timeoutMs ?? 30_000);
  try {
    const [stdout, stderr, exitCode] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
    return { exitCode, stdout, stderr };
  } finally {
    clearTimeout(timer);
  }
}

/**
 * A port for a test that must name it before its server starts: held open on `host` (connections
 * accepted and closed at once) until close() right before the real bind, so nothing else can take
 * it meanwhile. close() may be called again (dispose calls it).
 */
export function heldPort(host = "127.0.0.1"): HeldPort & Disposable {
  const held = holdPort(host);
  let open = true;
  const close = () => {
    if (open) held.close();
    open = false;
  };
  return { port: held.port, close, [Symbol.dispose]: close };
}
