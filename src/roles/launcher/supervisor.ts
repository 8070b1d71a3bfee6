// The one owner of every child `up` starts: spawns each with a stdin lifeline
// (KVCR_LIFELINE=stdin, see lib/role.ts) in its own process group, prefixes its output with its
// name (with --log-format json: sets it as `role` on each line, json-lines.ts), races each
// readiness probe against the child's exit under a named deadline (as nats.js's test launcher
// does), restarts a child put under a restart policy (backoff, readiness gate, a
// limit per window), reports the first child that exits unasked and is not (or no longer)
// restarted, and stops them all: SIGTERM, then SIGKILL after a grace period. A child the liveness
// watch (liveness.ts) finds hung is SIGKILLed here and its exit takes the same path as any other.
// Nothing it started outlives it, even when it is SIGKILLed.
import { createWriteStream, mkdirSync, type WriteStream } from "node:fs";
import { join } from "node:path";
import { KvcrError, ReadinessError } from "../../lib/errors.ts";
import type { LogFormat } from "../../lib/logger.ts";
import { LIFELINE_ENV } from "../../lib/role.ts";
import { childJsonLine } from "./json-lines.ts";
import { describeExit, SupervisedChild, type ChildExit } from "./supervised-child.ts";

export { describeExit, SupervisedChild, type ChildExit } from "./supervised-child.ts";

/** `up --restart on-failure`: how a child that exits unasked is restarted. */
export interface RestartPolicy {
  /** Restarts allowed within `windowMs`; one more exit stops the stack. */
  maxRestarts: number;
  windowMs: number;
  /** Delay before the first restart, doubled per restart up to `backoffMaxMs`. */
  backoffMs: number;
  backoffMaxMs: number;
  /** Once the child has stayed up (ready) this long, the delay starts over at `backoffMs`. */
  stableMs: number;
}

export const DEFAULT_RESTART_WINDOW_MS = 10 * 60_000;
export const DEFAULT_BACKOFF_MAX_MS = 30_000;
export const DEFAULT_STABLE_MS = 60_000;

export interface RestartEvent {
  name: string;
  exit: ChildExit;
  /** This restart's number within the window (1 … maxRestarts). */
  attempt: number;
  delayMs: number;
}

export interface RestartHooks {
  /** A restart is scheduled (before the delay). */
  onRestart?: (e: RestartEvent) => void;
  /** The restarted child passed its readiness gate; `restarts` counts all of this child's restarts. */
  onReady?: (child: SupervisedChild, restarts: number) => void;
  /** A restarted child failed its readiness gate (it is killed, which counts as its next exit). */
  onNotReady?: (name: string, err: Error) => void;
}

export interface SupervisorOptions {
  /** Where prefixed child output goes (default: up's stderr). */
  write?: (text: string) => void;
  color?: boolean;
  /** json: each child line is written as one JSON object with `role` (its name) instead of prefixed. */
  format?: LogFormat;
  /** Also write each child's output, unprefixed, to DIR/<name>.log. */
  logDir?: string;
  /** The children's environment (default: this process's). */
  env?: Readonly<Record<string, string | undefined>>;
  /** Lines of each child's output kept for error messages. */
  tailLines?: number;
}

const COLORS = [36, 33, 35, 32, 34, 31, 96, 93, 95, 92];

export interface ReadinessGate {
  /** What is awaited, for messages: "its /live". */
  what: string;
  /** Resolves when ready; throws with the reason it is not (yet). */
  probe: () => Promise<void>;
  timeoutMs: number;
  intervalMs: number;
}

interface Restartable {
  argv: readonly string[];
  env: Readonly<Record<string, string | undefined>>;
  gate: ReadinessGate;
  policy: RestartPolicy;
  hooks: RestartHooks;
  current: SupervisedChild;
  /** When each restart within the window was scheduled (performance.now()). */
  recent: number[];
  total: number;
  nextDelayMs: number;
  /** When the current child passed its readiness gate (undefined while it has not). */
  upSince: number | undefined;
}

export class Supervisor implements AsyncDisposable {
  /** Every child started, restarted ones included (the exited ones stay, finished). */
  readonly children: SupervisedChild[] = [];
  /** Resolves with the first child that exits while the stack is not being stopped and is not restarted. */
  readonly failure: Promise<ChildExit>;
  private resolveFailure!: (e: ChildExit) => void;
  private stopping: Promise<void> | undefined;
  private readonly stopRequested: Promise<void>;
  private requestStop!: () => void;
  private readonly restartable = new Map<string, Restartable>();
  /** Children stopped on request (a scheduled restart): their exit is neither a failure nor restarted by policy. */
  private readonly asked = new Set<SupervisedChild>();
  /** Children that passed a readiness gate (liveness applies to them only). */
  private readonly passedGate = new WeakSet<SupervisedChild>();
  private readonly logs = new Map<string, WriteStream>();
  private readonly colors = new Map<string, number>();
  private readonly write: (text: string) => void;
  private readonly width: number;

  constructor(
    names: readonly string[],
    private readonly opts: SupervisorOptions = {},
  ) {
    this.failure = new Promise((resolve) => (this.resolveFailure = resolve));
    this.stopRequested = new Promise((resolve) => (this.requestStop = resolve));
    this.write = opts.write ?? ((text) => void process.stderr.write(text));
    this.width = Math.max(0, ...names.map((n) => n.length));
    if (opts.logDir) mkdirSync(opts.logDir, { recursive: true });
  }

  get isStopping(): boolean {
    return this.stopping !== undefined;
  }

  spawn(name: string, argv: readonly string[], env: Readonly<Record<string, string | undefined>> = {}): SupervisedChild {
    if (this.stopping) throw new KvcrError("STACK_STOPPING", `not starting ${name}: the stack is stopping`);
    if (!this.colors.has(name)) this.colors.set(name, COLORS[this.colors.size % COLORS.length]!);
    const color = this.opts.color ? this.colors.get(name) : undefined;
    const label = `${name.padEnd(this.width)} | `;
    const prefix = this.opts.format === "json" ? (line: string) => childJsonLine(name, line) : color ? `\x1b[${color}m${label}\x1b[0m` : label;
    let proc: Bun.Subprocess<"pipe", "pipe", "pipe">;
    try {
      proc = Bun.spawn([...argv], {
        // The lifeline: never written to; the kernel closes it when this process ends in any way.
        stdin: "pipe",
        stdout: "pipe",
        stderr: "pipe",
        // Its own process group: a terminal's Ctrl-C reaches `up` alone, which then stops the
        // children in order; `up` signals each group, so a child's own children go with it.
        detached: true,
        env: { ...(this.opts.env ?? process.env), ...env, [LIFELINE_ENV]: "stdin" },
      });
    } catch (err) {
      throw new KvcrError("SPAWN_FAILED", `cannot start ${name} (${argv[0]}): ${(err as Error).message}`);
    }
    let log = this.logs.get(name);
    if (!log && this.opts.logDir) this.logs.set(name, (log = createWriteStream(join(this.opts.logDir, `${name}.log`), { flags: "a" })));
    const child = new SupervisedChild(name, proc, prefix, this.write, log, this.opts.tailLines ?? 20);
    this.children.push(child);
    void child.exited.then((e) => {
      if (this.stopping || this.asked.has(child)) return;
      const r = this.restartable.get(name);
      if (r?.current === child) void this.restart(r, child, e);
      else if (!r) this.resolveFailure(e);
    });
    return child;
  }

  /**
   * Puts a running (ready) child under a restart policy: when it exits unasked it is started again
   * with the same argv after the backoff delay and must pass `gate` again; one exit past
   * `policy.maxRestarts` restarts within the window makes it the failure, with its last stderr lines.
   */
  restartOnFailure(child: SupervisedChild, argv: readonly string[], gate: ReadinessGate, policy: RestartPolicy, hooks: RestartHooks = {}, env: Readonly<Record<string, string | undefined>> = {}): void {
    if (!child.running || this.stopping) return; // its exit is (or will be) the failure as before
    this.restartable.set(child.name, { argv, env, gate, policy, hooks, current: child, recent: [], total: 0, nextDelayMs: policy.backoffMs, upSince: performance.now() });
  }

  /** The latest child started under this name. */
  current(name: string): SupervisedChild | undefined {
    return this.children.findLast((c) => c.name === name);
  }

  /**
   * The child under this name that is up: running, past its readiness gate, and neither being
   * restarted nor stopped on request. Undefined meanwhile (a readiness gate has its own deadline).
   */
  upChild(name: string): SupervisedChild | undefined {
    const c = this.current(name);
    if (this.stopping || !c?.running || this.asked.has(c) || !this.passedGate.has(c)) return undefined;
    const r = this.restartable.get(name);
    return r === undefined || (r.current === c && r.upSince !== undefined) ? c : undefined;
  }

  /**
   * The child `name` (the one up now) stopped answering its liveness probe: SIGKILL. Its exit is
   * then handled as any other: restarted under the policy (counted, backed off), or the failure.
   */
  killHung(name: string, silentMs: number): SupervisedChild | undefined {
    const c = this.upChild(name);
    c?.killHung(silentMs);
    return c;
  }

  /**
   * Restarts a child on request (a fault schedule's `restart`): SIGTERM (SIGKILL after `graceMs`),
   * then the same argv again, gated on readiness. Its exit counts neither as a failure nor against
   * the restart policy, which keeps watching the new child.
   */
  async restartNow(name: string, argv: readonly string[], gate: ReadinessGate, graceMs: number, env: Readonly<Record<string, string | undefined>> = {}): Promise<SupervisedChild> {
    const old = this.current(name);
    if (old) {
      this.asked.add(old);
      old.signal("SIGTERM");
      let timer: ReturnType<typeof setTimeout> | undefined;
      const late = await Promise.race([old.exited.then(() => false), new Promise<boolean>((r) => (timer = setTimeout(() => r(true), graceMs)))]);
      clearTimeout(timer);
      if (late) old.signal("SIGKILL");
      await old.exited;
      void Promise.resolve(old.proc.stdin.end()).catch(() => {});
    }
    const next = this.spawn(name, argv, env);
    const r = this.restartable.get(name);
    if (r) [r.current, r.upSince] = [next, undefined];
    await this.waitReady(next, gate);
    if (r && r.current === next) r.upSince = performance.now();
    return next;
  }

  private async restart(r: Restartable, child: SupervisedChild, exit: ChildExit): Promise<void> {
    const { policy } = r;
    void Promise.resolve(child.proc.stdin.end()).catch(() => {});
    const now = performance.now();
    if (r.upSince !== undefined && now - r.upSince >= policy.stableMs) r.nextDelayMs = policy.backoffMs;
    r.upSince = undefined;
    r.recent = r.recent.filter((t) => now - t < policy.windowMs);
    if (r.recent.length >= policy.maxRestarts) {
      await withDeadline(child.drained, 2_000);
      this.resolveFailure({ ...exit, restarts: r.recent.length, stderrTail: child.stderrTail() });
      return;
    }
    r.recent.push(now);
    r.total++;
    const delayMs = r.nextDelayMs;
    r.nextDelayMs = Math.min(Math.max(policy.backoffMaxMs, policy.backoffMs), delayMs * 2);
    r.hooks.onRestart?.({ name: child.name, exit, attempt: r.recent.length, delayMs });
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([this.stopRequested, new Promise<void>((res) => void (timer = setTimeout(res, delayMs)))]);
    clearTimeout(timer);
    if (this.stopping) return;
    let next: SupervisedChild;
    try {
      next = this.spawn(child.name, r.argv, r.env);
    } catch (err) {
      if (!this.stopping) this.resolveFailure({ ...exit, restarts: r.recent.length, stderrTail: [(err as Error).message] });
      return;
    }
    r.current = next;
    // The exited child leaves the list (its output is drained): a child restarted for days does not grow it.
    const at = this.children.indexOf(child);
    if (at >= 0) this.children.splice(at, 1);
    try {
      await this.waitReady(next, r.gate);
    } catch (err) {
      if (this.stopping || r.current !== next) return;
      r.hooks.onNotReady?.(child.name, err as Error);
      next.signal("SIGKILL"); // its exit is the next one the policy counts (unless it already exited)
      return;
    }
    if (this.stopping || r.current !== next || !next.running) return;
    r.upSince = performance.now();
    r.hooks.onReady?.(next, r.total);
  }

  /**
   * Probes until ready, racing the child's exit and a deadline; rejects with a ReadinessError that
   * names the child, what was awaited, the last probe's error and the tail of its output.
   */
  async waitReady(child: SupervisedChild, gate: ReadinessGate): Promise<void> {
    const deadline = performance.now() + gate.timeoutMs;
    let lastError = "no probe finished yet";
    const exited = child.exited.then((e) => e);
    for (;;) {
      const outcome = await Promise.race([
        gate.probe().then(
          () => "ready" as const,
          (err: unknown) => ((lastError = err instanceof Error ? err.message : String(err)), "not yet" as const),
        ),
        exited,
      ]);
      if (outcome === "ready") {
        this.passedGate.add(child);
        return;
      }
      if (typeof outcome === "object") {
        await child.drained;
        throw new ReadinessError(`${child.name} ${describeExit(outcome)} before it was ready (waiting for ${gate.what})${this.tailText(child)}`);
      }
      const left = deadline - performance.now();
      if (left <= 0) {
        throw new ReadinessError(`${child.name} did not become ready within ${fmtSeconds(gate.timeoutMs)} (waiting for ${gate.what}); last probe: ${lastError}${this.tailText(child)}`);
      }
      let timer: ReturnType<typeof setTimeout> | undefined;
      const exitedWhileWaiting = await Promise.race([exited, new Promise<undefined>((r) => void (timer = setTimeout(() => r(undefined), Math.min(gate.intervalMs, left))))]);
      clearTimeout(timer);
      if (exitedWhileWaiting) {
        await child.drained;
        throw new ReadinessError(`${child.name} ${describeExit(exitedWhileWaiting)} before it was ready (waiting for ${gate.what}; last probe: ${lastError})${this.tailText(child)}`);
      }
    }
  }

  tailText(child: SupervisedChild): string {
    const tail = child.tail();
    return tail.length > 0 ? `; its last output:\n${tail.map((l) => `    ${l}`).join("\n")}` : "; it wrote no output";
  }

  /** SIGTERM to every child, SIGKILL to those still running after `graceMs`; idempotent. */
  stop(graceMs: number): Promise<void> {
    this.requestStop();
    return (this.stopping ??= (async () => {
      for (const c of this.children) c.signal("SIGTERM");
      const all = Promise.all(this.children.map((c) => c.exited));
      let timer: ReturnType<typeof setTimeout> | undefined;
      const timedOut = await Promise.race([all.then(() => false), new Promise<boolean>((r) => (timer = setTimeout(() => r(true), graceMs)))]);
      clearTimeout(timer);
      if (timedOut) {
        const stuck = this.children.filter((c) => c.running);
        if (stuck.length > 0) this.write(`up: ${stuck.map((c) => c.name).join(", ")} still running after ${fmtSeconds(graceMs)}: SIGKILL\n`);
        for (const c of stuck) c.signal("SIGKILL");
        await all;
      }
      // Closing the lifelines releases their fds (every child has exited, so nobody reads them).
      for (const c of this.children) void Promise.resolve(c.proc.stdin.end()).catch(() => {});
      await Promise.all(this.children.map((c) => withDeadline(c.drained, 2_000)));
      await Promise.all([...this.logs.values()].map((l) => new Promise<void>((r) => l.end(r))));
    })());
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop(0);
  }
}

function fmtSeconds(ms: number): string {
  return `${Number((ms / 1000).toFixed(3))} s`;
}

async function withDeadline(p: Promise<unknown>, ms: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([p, new Promise<void>((r) => void (timer = setTimeout(r, ms)))]);
  clearTimeout(timer);
}
