// The model directory behind a Dynamo model card: the files it names (path, blake3 of the bytes,
// size: the frontend re-hashes what it reads and refuses a mismatch), the context length and the
// ids of the vocabulary the mocker draws output tokens from, so Dynamo's frontend detokenizes them.
import { blake3 } from "@noble/hashes/blake3.js";
import { existsSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { ConfigError } from "../../../lib/errors.ts";
import type { CheckedFile } from "../../../protocol/dynamo/discovery-records.ts";

export interface ModelDir {
  path: string;
  tokenizer: CheckedFile;
  config: CheckedFile;
  tokenizerConfig: CheckedFile | undefined;
  maxPositionEmbeddings: number;
  /** Output ids are drawn from `count` ids from `first`: the longest run of the vocabulary without an end-of-text id (so none is drawn). */
  outputIds: { first: number; count: number };
}

function checked(path: string): CheckedFile {
  const bytes = readFileSync(path);
  const hex = Buffer.from(blake3(bytes)).toString("hex");
  return { path, checksum: `blake3:${hex}`, size: bytes.length };
}

export function readModelDir(dir: string): ModelDir {
  const path = resolve(dir);
  const need = (name: string) => {
    const file = join(path, name);
    if (!existsSync(file)) throw new ConfigError([`--model-path: ${path} has no ${name} (\`kvcr-mock model-files --out DIR\` writes a model directory Dynamo loads offline)`]);
    return file;
  };
  const tokenizer = checked(need("tokenizer.json"));
  const config = checked(need("config.json"));
  const tcPath = join(path, "tokenizer_config.json");
  let cfg: Record<string, unknown>;
  try {
    cfg = JSON.parse(readFileSync(config.path, "utf8")) as Record<string, unknown>;
  } catch (err) {
    throw new ConfigError([`--model-path: ${config.path} is not JSON: ${(err as Error).message}`]);
  }
  const vocab = cfg.vocab_size;
  if (typeof vocab !== "number" || !Number.isInteger(vocab) || vocab < 2) throw new ConfigError([`--model-path: ${config.path} has no usable vocab_size (got ${JSON.stringify(vocab)})`]);
  // config.json names one end-of-text id or several: a drawn one would end the stream early.
  const eos = (Array.isArray(cfg.eos_token_id) ? cfg.eos_token_id : [cfg.eos_token_id]).filter((e): e is number => Number.isInteger(e) && (e as number) >= 0 && (e as number) < vocab);
  const maxPos = typeof cfg.max_position_embeddings === "number" ? cfg.max_position_embeddings : 0;
  return {
    path,
    tokenizer,
    config,
    tokenizerConfig: existsSync(tcPath) ? checked(tcPath) : undefined,
    maxPositionEmbeddings: maxPos,
    outputIds: longestRunWithout(eos, vocab),
  };
}

/**
 * The longest run of ids in [0, vocab) holding none of `excluded`: below a trailing end of text,
 * or past one that follows the bytes (model-files' words: each is whole text, where a byte alone
 * can be half a character, which the frontend holds back and streams with the next).
 */
function longestRunWithout(excluded: readonly number[], vocab: number): { first: number; count: number } {
  const cuts = [-1, ...[...new Set(excluded)].sort((a, b) => a - b), vocab];
  let best = { first: 0, count: 0 };
  for (let i = 1; i < cuts.length; i++) {
    const run = { first: cuts[i - 1]! + 1, count: cuts[i]! - cuts[i - 1]! - 1 };
    if (run.count > best.count) best = run;
  }
  return best;
}
