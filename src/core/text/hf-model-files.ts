// The files a Hugging Face client (Dynamo's frontend, aiperf, transformers) needs to load a mock
// model offline: a byte-level BPE tokenizer with no merges (the 256 byte symbols of GPT-2's
// ByteLevel alphabet, ids in the alphabet's sorted order, plus `<|endoftext|>` as id 256), as
// Dynamo's own offline example ships it; tokenizer_config.json with kvcr-mock's chat template; and
// config.json. One token is one byte of UTF-8. Ids 257–32767 are words no text encodes to (no
// merge forms them), there to be decoded and accepted: Dynamo's mocker emits ids 1000–1999, which
// with bytes alone decode to nothing (its streams would carry no text, a client could time no
// token), and Dynamo's frontend refuses prompt ids past the vocabulary (a benchmark's token-id
// prompts, vLLM's random dataset, a trace's hash ids, all below 32,000). Pure: the caller writes
// the texts.
import { CHAT_TEMPLATE_JINJA } from "./tokenizer.ts";

export const VOCAB_SIZE = 32768;
export const END_OF_TEXT = "<|endoftext|>";
export const END_OF_TEXT_ID = 256;
/** What config.json says the model is (Llama's shape, which --kv-bytes-per-token defaults to). */
export const MODEL_TYPE = "llama";
export const ARCHITECTURES: readonly string[] = ["LlamaForCausalLM"];

/** GPT-2's bytes_to_unicode: printable Latin-1 bytes stand for themselves, the rest for U+0100 on. */
export function byteSymbols(): string[] {
  const printable = (b: number) => (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
  const symbols: string[] = [];
  let next = 0x100;
  for (let b = 0; b < 256; b++) symbols.push(String.fromCodePoint(printable(b) ? b : next++));
  return symbols;
}

/** The vocabulary: each byte's symbol, ids in code-point order of the symbols (as `tokenizers` sorts the alphabet). */
export function byteVocab(): Record<string, number> {
  const sorted = byteSymbols().sort((a, b) => a.codePointAt(0)! - b.codePointAt(0)!);
  return Object.fromEntries(sorted.map((s, id) => [s, id]));
}

export interface ModelFilesOptions {
  /** The context length the files declare (max_position_embeddings, model_max_length). */
  maxModelLen: number;
}

/** The output words: id k (257 ≤ k < VOCAB_SIZE) is ` t<k>` (a space and a letter, so each reads as a word). */
export function outputWords(): Record<string, number> {
  return Object.fromEntries(Array.from({ length: VOCAB_SIZE - END_OF_TEXT_ID - 1 }, (_, i) => [`\u0120t${END_OF_TEXT_ID + 1 + i}`, END_OF_TEXT_ID + 1 + i]));
}

/** File name → text, for a directory that `AutoTokenizer.from_pretrained(dir)` loads offline. */
export function hfModelFiles(opts: ModelFilesOptions): Record<string, string> {
  const byteLevel = { type: "ByteLevel", add_prefix_space: false, trim_offsets: true, use_regex: true };
  const tokenizer = {
    version: "1.0",
    truncation: null,
    padding: null,
    added_tokens: [{ id: END_OF_TEXT_ID, content: END_OF_TEXT, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true }],
    normalizer: null,
    pre_tokenizer: byteLevel,
    post_processor: null,
    decoder: { ...byteLevel, add_prefix_space: true },
    model: {
      type: "BPE", dropout: null, unk_token: null, continuing_subword_prefix: null, end_of_word_suffix: null,
      fuse_unk: false, byte_fallback: false, ignore_merges: false, vocab: { ...byteVocab(), [END_OF_TEXT]: END_OF_TEXT_ID, ...outputWords() }, merges: [],
    },
  };
  const config = {
    model_type: MODEL_TYPE, architectures: ARCHITECTURES, eos_token_id: END_OF_TEXT_ID, bos_token_id: END_OF_TEXT_ID,
    vocab_size: VOCAB_SIZE, max_position_embeddings: opts.maxModelLen,
  };
  const tokenizerConfig = {
    tokenizer_class: "PreTrainedTokenizerFast", model_max_length: opts.maxModelLen,
    eos_token: END_OF_TEXT, bos_token: END_OF_TEXT, chat_template: CHAT_TEMPLATE_JINJA,
  };
  const text = (value: unknown) => `${JSON.stringify(value, null, 2)}\n`;
  return { "tokenizer.json": text(tokenizer), "tokenizer_config.json": text(tokenizerConfig), "config.json": text(config) };
}
