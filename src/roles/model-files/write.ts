// Writes the offline model directory (core/text/hf-model-files.ts has what is in it) for
// `kvcr-mock model-files`: the directory is created if missing, the three files overwritten.
import { mkdirSync, statSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { hfModelFiles } from "../../core/text/hf-model-files.ts";
import { ConfigError } from "../../lib/errors.ts";

/** Returns the directory's absolute path and the names written; an --out that is a file is a ConfigError. */
export function writeModelFiles(out: string, maxModelLen: number): { dir: string; names: string[] } {
  const dir = resolve(out);
  const existing = statSync(dir, { throwIfNoEntry: false });
  if (existing && !existing.isDirectory()) throw new ConfigError([`--out: ${dir} exists and is not a directory`]);
  mkdirSync(dir, { recursive: true });
  const files = hfModelFiles({ maxModelLen });
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return { dir, names: Object.keys(files) };
}
