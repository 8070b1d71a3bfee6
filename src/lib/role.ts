// The shape every role's start() returns, so tests can run a whole stack in one process and
// the launcher can run each role as a child process (same code both ways).

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
