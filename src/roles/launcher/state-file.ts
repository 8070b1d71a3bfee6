// `up --state-file`: claimed before anything starts (a live `up`'s file is refused, a stale one
// removed), then written atomically (a temp file renamed over it) whenever the stack changes,
// one write at a time, and removed on every exit `up` lives to see.
import { readFile, rename, rm, writeFile } from "node:fs/promises";
import { KvcrError } from "../../lib/errors.ts";
import type { Logger } from "../../lib/logger.ts";
import { processAlive } from "../../lib/process-alive.ts";

/**
 * Before anything starts: a state file naming a live `up` (another stack's) is refused; one whose
 * pid is gone (an `up` that was SIGKILLed) is stale and removed at once, so no exit path of this
 * `up` leaves it behind. Unreadable or foreign content is overwritten, as before.
 */
export async function claimStateFile(path: string, logger: Logger): Promise<void> {
  let pid: unknown;
  try {
    pid = (JSON.parse(await readFile(path, "utf8")) as { pid?: unknown }).pid;
  } catch {
    return; // missing, unreadable or not JSON: written over once the stack is ready
  }
  if (typeof pid === "number" && Number.isInteger(pid) && pid > 0 && pid !== process.pid && processAlive(pid)) {
    throw new KvcrError("STATE_FILE_IN_USE", `--state-file ${path} belongs to a running up (pid ${pid}): stop it first or choose another state file`);
  }
  await rm(path, { force: true });
  logger.info(`removed stale state file ${path}${typeof pid === "number" ? ` (its up, pid ${pid}, is gone)` : ""}`);
}

/** Rewrites of one state file, serialized (one temp file); none once removed or while `up` stops. */
export class StateFileWriter {
  private writing = Promise.resolve();
  private removed = false;

  constructor(
    readonly path: string,
    private readonly content: () => unknown,
    private readonly stopping: () => boolean,
  ) {}

  write(): Promise<void> {
    return (this.writing = this.writing.then(async () => {
      if (this.removed || this.stopping()) return;
      const tmp = `${this.path}.${process.pid}.tmp`;
      try {
        await writeFile(tmp, JSON.stringify(this.content(), null, 2) + "\n");
        await rename(tmp, this.path);
      } finally {
        await rm(tmp, { force: true });
      }
    }));
  }

  /** Waits for a write in progress, then removes the file; later writes do nothing. */
  async remove(): Promise<void> {
    this.removed = true;
    await this.writing.catch(() => {});
    await rm(this.path, { force: true });
  }
}
