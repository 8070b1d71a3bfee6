// The shape every role's start() returns, so tests can run a whole stack in one process and
// the launcher can run each role as a child process (same code both ways); and how a CLI serves
// one until it is asked to stop.
import type { Logger } from "./logger.ts";

export interface RoleHandle {
  /** Resolves once the role serves (what /live or /health report). */
  readonly ready: Promise<void>;
  /** Actual listening ports, by name (port 0 resolved). */
  readonly ports: Readonly<Record<string, number | readonly number[]>>;
  /** Stops everything the role started; safe to call twice. */
  close(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

/**
 * Resolves when the process is first asked to stop (SIGINT or SIGTERM), naming the signal. The
 * handlers stay installed: a second Ctrl-C (or a process-group signal from `timeout`) during
 * shutdown calls `onRepeat` instead of killing the process before it has withdrawn its records.
 */
export function untilSignal(onRepeat: (sig: NodeJS.Signals) => void = () => {}, signals: readonly NodeJS.Signals[] = ["SIGINT", "SIGTERM"]): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    let first: NodeJS.Signals | undefined;
    const onSignal = (sig: NodeJS.Signals) => {
      if (first === undefined) {
        first = sig;
        resolve(sig);
      } else {
        onRepeat(sig);
      }
    };
    for (const s of signals) process.on(s, onSignal);
  });
}

/**
 * A serving role's stop source: exit code 0 on the first SIGINT/SIGTERM (logged as
 * "SIG…: shutting down"); a repeat is logged as "SIG… again: already shutting down" plus `note`.
 */
export function untilStopSignal(logger: Logger, note = ""): Promise<0> {
  return untilSignal((sig) => logger.warn(`${sig} again: already shutting down${note}`)).then((sig) => {
    logger.info(`${sig}: shutting down`);
    return 0 as const;
  });
}

/** How `kvcr-mock up` tells a child that its stdin is a lifeline (value `stdin`). */
export const LIFELINE_ENV = "KVCR_LIFELINE";

/**
 * Resolves with exit code 1 once the supervising parent is gone. `up` starts every child with
 * KVCR_LIFELINE=stdin and a stdin pipe it never writes to; the kernel closes that pipe when `up`
 * ends in any way, SIGKILL included, so end-of-file on stdin means nobody supervises this process
 * any more and it shuts down (withdrawing its records) instead of living on as an orphan. Without
 * the variable it never resolves: an interactive role's stdin belongs to the user.
 */
export function untilLifelineCut(
  logger: { warn(message: string): void },
  env: Readonly<Record<string, string | undefined>> = process.env,
  stdin: () => ReadableStream<Uint8Array> = () => Bun.stdin.stream(),
): Promise<number> {
  if (env[LIFELINE_ENV] !== "stdin") return new Promise(() => {});
  return (async () => {
    try {
      const reader = stdin().getReader();
      while (!(await reader.read()).done) {
        // Bytes on the lifeline mean nothing; only its end does.
      }
    } catch {
      // A broken stdin is a cut lifeline too.
    }
    logger.warn("the supervising parent is gone (stdin lifeline closed): shutting down");
    return 1;
  })();
}

/**
 * Serves a started role until the first of `stops` resolves (with the exit code to use), its
 * `ready` rejects (logged with the reason, exit code 1) or its lifeline to a supervising `up` is
 * cut (untilLifelineCut). The role is closed on every path, and a rejected `ready` is always
 * handled here, never left as an unhandled rejection.
 */
export async function serveRole(
  role: RoleHandle,
  opts: { name: string; logger: Logger; stops: readonly Promise<number>[]; env?: Readonly<Record<string, string | undefined>> },
): Promise<number> {
  const failed = role.ready.then(
    () => new Promise<number>(() => {}),
    (err: unknown) => {
      opts.logger.error(`${opts.name}: stopping: ${err instanceof Error ? err.message : String(err)}`);
      return 1;
    },
  );
  try {
    return await Promise.race([failed, ...opts.stops, untilLifelineCut(opts.logger, opts.env)]);
  } finally {
    await role.close();
  }
}

/**
 * Resolves with exit code 1 on the first uncaught exception or unhandled rejection (logged), so
 * serveRole still closes the role — withdrawing its discovery records — before the process exits.
 */
export function untilCrash(logger: Logger): Promise<number> {
  return new Promise((resolve) => {
    const crash = (err: unknown) => {
      logger.error(`fatal: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
      resolve(1);
    };
    process.on("uncaughtException", crash);
    process.on("unhandledRejection", crash);
  });
}
