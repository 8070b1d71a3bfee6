// Checks that a file can be written before a long job produces it: opened for append (so an
// existing file is neither truncated nor changed) and, when the probe created it, removed again.
import { closeSync, existsSync, openSync, unlinkSync } from "node:fs";

/** Throws the OS error (EACCES, ENOENT for a missing folder, EISDIR, EROFS…) when `path` cannot be written. */
export function probeWritable(path: string): void {
  const existed = existsSync(path);
  closeSync(openSync(path, "a"));
  if (!existed) unlinkSync(path);
}
