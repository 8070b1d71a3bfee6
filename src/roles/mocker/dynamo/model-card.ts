// The model directory behind a Dynamo model card: the files it names (path, blake3 of the bytes,
// size: the frontend re-hashes what it reads and refuses a mismatch), the context length and the
// vocabulary the mocker draws output ids below, so Dynamo's frontend detokenizes them.
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
  /** Output ids are drawn from [0, outputVocab): below the first end-of-text id (so none is drawn), or the whole vocabulary. */
  outputVocab: number;
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
  // config.json names one end-of-text id or several; an id drawn past one would end the stream early.
  const eos = (Array.isArray(cfg.eos_token_id) ? cfg.eos_token_id : [cfg.eos_token_id]).filter((e): e is number => Number.isInteger(e) && (e as number) >= 2 && (e as number) < vocab);
  const maxPos = typeof cfg.max_position_embeddings === "number" ? cfg.max_position_embeddings : 0;
  return {
    path,
    tokenizer,
    config,
    tokenizerConfig: existsSync(tcPath) ? checked(tcPath) : undefined,
    maxPositionEmbeddings: maxPos,
    outputVocab: eos.length > 0 ? Math.min(...eos) : vocab,
  };
}
