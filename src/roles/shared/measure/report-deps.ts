// What the load-driving roles (replay, bench, calibrate) take from their command for files, output
// and time: the CLI hands them the real ones (cli/report-io.ts), tests their own.
import type { BlockHasher } from "../../../core/kv/block-hash.ts";
import type { Logger } from "../../../lib/logger.ts";

export interface ReportDeps {
  hasher: BlockHasher;
  readFile(path: string): string;
  writeFile(path: string, text: string): void;
  /** Throws when `path` cannot be written; called before the long work (src/lib/probe-writable.ts). */
  checkWritable(path: string): void;
  stdout: { write(text: string): unknown };
  logger: Logger;
  /** Wall clock in ms (performance.now). */
  now(): number;
}
