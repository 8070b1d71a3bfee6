// Command output (stdout) guarded at the process edge: a failed write never throws into the
// caller (a socket callback would swallow it and run on forever), and the first failure ends the
// command: EPIPE (the reader left, as `| head` does) with exit 0, anything else with exit 1.
import type { Logger } from "./logger.ts";

export interface GuardedOutput {
  /** Writes text; after the first failure, further writes are dropped. Never throws. */
  write(text: string): void;
  /** Resolves with the exit code once a write has failed (never resolves otherwise). */
  readonly stopped: Promise<number>;
}

export function guardOutput(stream: NodeJS.WritableStream, logger: Logger, name = "stdout"): GuardedOutput {
  let broken = false;
  let stop: (code: number) => void = () => {};
  const stopped = new Promise<number>((resolve) => (stop = resolve));
  const fail = (err: unknown) => {
    if (broken) return;
    broken = true;
    if ((err as { code?: unknown } | undefined)?.code === "EPIPE") {
      logger.debug(`${name} closed by its reader (EPIPE): stopping`);
      stop(0);
    } else {
      logger.error(`cannot write to ${name}: ${err instanceof Error ? err.message : String(err)}`);
      stop(1);
    }
  };
  // Bun reports a broken pipe by throwing from write(), Node through an "error" event: catch both.
  stream.on("error", fail);
  return {
    write(text) {
      if (broken) return;
      try {
        stream.write(text);
      } catch (err) {
        fail(err);
      }
    },
    stopped,
  };
}
