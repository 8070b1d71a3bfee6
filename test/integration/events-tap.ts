// The `kvcr-mock events` tap as a child process (the CLI from source) for the integration tests:
// its stdout JSON lines collected as they come, its stderr kept for failure messages.
import { CLI_ENTRY, spawnChild } from "../harness.ts";
import { LineQueue } from "../lines.ts";

export type TapLine = Record<string, unknown>;

export interface Tap extends AsyncDisposable {
  readonly proc: Bun.Subprocess<"ignore", "pipe", "pipe">;
  /** Every line the tap printed so far, parsed, in order. */
  readonly lines: TapLine[];
  /** Everything the tap wrote to stderr so far. */
  stderr(): string;
  /** Waits (10 s at most) for a printed line that satisfies `pred`; `what` names it in the error. */
  until(pred: (line: TapLine) => boolean, what: string): Promise<TapLine>;
}

/** Starts `kvcr-mock events --log-level warn ...args`; dispose kills it (SIGKILL) and waits for the exit. */
export function spawnTap(args: readonly string[]): Tap {
  const child = spawnChild([process.execPath, CLI_ENTRY, "events", "--log-level", "warn", ...args]);
  const { proc } = child;
  const stdout = new LineQueue(proc.stdout, (line) => JSON.parse(line) as TapLine);
  let stderr = "";
  void (async () => {
    const decoder = new TextDecoder();
    for await (const chunk of proc.stderr) stderr += decoder.decode(chunk, { stream: true });
  })();
  return {
    proc,
    lines: stdout.lines,
    stderr: () => stderr,
    until: (pred, what) => stdout.next(pred, 10_000, () => `${what} (stderr: ${stderr})`),
    [Symbol.asyncDispose]: () => child[Symbol.asyncDispose](),
  };
}
