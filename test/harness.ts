// Shared test helpers: temp dirs, spawning kvcr-mock, waiting on conditions (never fixed sleeps).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

export const REPO_ROOT = resolve(import.meta.dir, "..");
export const SHARED_DIR = resolve(REPO_ROOT, "../shared");
export const CLI_ENTRY = resolve(REPO_ROOT, "src/cli.ts");

export interface TempDir {
  path: string;
  [Symbol.dispose](): void;
}

export function tempDir(prefix = "kvcr-test-"): TempDir {
  const path = mkdtempSync(join(tmpdir(), prefix));
  return { path, [Symbol.dispose]: () => rmSync(path, { recursive: true, force: true }) };
}

export interface RunResult {
  exitCode: number;
  stdout: string;
  stderr: string;
}

/** Runs the CLI from source (or a given binary) to completion with a bounded timeout. */
export async function runCli(args: string[], opts: { bin?: string; env?: Record<string, string>; timeoutMs?: number; cwd?: string } = {}): Promise<RunResult> {
  const cmd = opts.bin ? [opts.bin, ...args] : [process.execPath, CLI_ENTRY, ...args];
  const proc = Bun.spawn(cmd, {
    stdout: "pipe",
    stderr: "pipe",
    stdin: "ignore",
    cwd: opts.cwd,
    env: { ...process.env, NO_COLOR: "1", ...opts.env },
    timeout: opts.timeoutMs ?? 30_000,
    killSignal: "SIGKILL",
  });
  const [stdout, stderr, exitCode] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { exitCode, stdout, stderr };
}

/** Polls `predicate` until it holds or `timeoutMs` passes (then throws naming `what`). */
export async function waitFor(predicate: () => boolean | Promise<boolean>, what: string, timeoutMs = 10_000, intervalMs = 10): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!(await predicate())) {
    if (performance.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await Bun.sleep(intervalMs);
  }
}
