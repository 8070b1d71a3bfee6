// Writes the offline model directory (core/text/hf-model-files.ts has what is in it) for
// `kvcr-mock model-files`: the directory is created if missing, the three files overwritten; or,
// with a hub repo name, the same files as the Hugging Face hub cache holds a download of it
// (models--ORG--NAME/snapshots/<rev>/ and refs/main naming the revision).
import { createHash } from "node:crypto";
import { mkdirSync, statSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { hfModelFiles } from "../../core/text/hf-model-files.ts";
import { ConfigError } from "../../lib/errors.ts";

/** Returns the directory the files are in (absolute) and their names; an --out that is a file is a ConfigError. */
export function writeModelFiles(out: string, maxModelLen: number, hubRepo?: string): { dir: string; names: string[] } {
  const root = resolve(out);
  const existing = statSync(root, { throwIfNoEntry: false });
  if (existing && !existing.isDirectory()) throw new ConfigError([`--out: ${root} exists and is not a directory`]);
  const files = hfModelFiles({ maxModelLen });
  let dir = root;
  if (hubRepo !== undefined) {
    // The revision is the files' own hash: the same files, the same snapshot.
    const rev = createHash("sha1").update(Object.values(files).join("\0")).digest("hex");
    const repoDir = join(root, `models--${hubRepo.replace("/", "--")}`);
    dir = join(repoDir, "snapshots", rev);
    mkdirSync(join(repoDir, "refs"), { recursive: true });
    writeFileSync(join(repoDir, "refs", "main"), rev);
  }
  mkdirSync(dir, { recursive: true });
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return { dir, names: Object.keys(files) };
}
