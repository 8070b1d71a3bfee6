// `frontend --tokenizer PATH`: the Hugging Face tokenizer prompts are counted with, read once at
// start (a directory's tokenizer.json, or the file itself). One kvcr-mock cannot reproduce is a
// configuration error naming the path and why, before the frontend serves.
import { readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { byteLevelTokenizer, type TextTokenizer } from "../../core/text/byte-level-tokenizer.ts";
import { ConfigError } from "../../lib/errors.ts";

export function loadTokenizer(path: string): TextTokenizer {
  const file = statSync(path, { throwIfNoEntry: false })?.isDirectory() ? join(path, "tokenizer.json") : path;
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(file, "utf8"));
  } catch (err) {
    throw new ConfigError([`--tokenizer: cannot read ${file} as a tokenizer.json (${(err as Error).message.split("\n")[0]})`]);
  }
  const t = byteLevelTokenizer(json);
  if (typeof t !== "function") throw new ConfigError([`--tokenizer: ${file}: ${t.problem}`]);
  return t;
}
