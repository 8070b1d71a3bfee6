import { describe, expect, test } from "bun:test";
import { byteVocab, END_OF_TEXT_ID, hfModelFiles, outputWords, VOCAB_SIZE } from "./hf-model-files.ts";

describe("hfModelFiles", () => {
  test("the vocabulary is the 256 ByteLevel symbols, ids 0..255 in code-point order, as GPT-2 maps bytes", () => {
    const vocab = byteVocab();
    const entries = Object.entries(vocab);
    expect(entries).toHaveLength(256);
    expect(entries.map(([, id]) => id).sort((a, b) => a - b)).toEqual([...Array(256).keys()]);
    // Printable ASCII stands for itself and comes first; space (0x20) is U+0120 'Ġ', newline U+010A 'Ċ'.
    expect(vocab["!"]).toBe(0);
    expect(vocab.T).toBe(0x54 - 0x21);
    expect(vocab["\u0120"]).toBe(220);
    expect(vocab["\u010a"]).toBe(198);
    expect(vocab["\u0100"]).toBe(188); // byte 0x00, the first non-printable
  });

  test("config.json and tokenizer_config.json declare the vocabulary, end of text and context length", () => {
    const files = hfModelFiles({ maxModelLen: 4096 });
    expect(Object.keys(files).sort()).toEqual(["config.json", "tokenizer.json", "tokenizer_config.json"]);
    const config = JSON.parse(files["config.json"]!);
    expect(config).toMatchObject({ vocab_size: VOCAB_SIZE, eos_token_id: END_OF_TEXT_ID, bos_token_id: END_OF_TEXT_ID, max_position_embeddings: 4096 });
    expect([config.vocab_size, config.eos_token_id]).toEqual([32768, 256]); // 256 bytes, end of text, then words, as literals
    const tc = JSON.parse(files["tokenizer_config.json"]!);
    expect(tc).toMatchObject({ model_max_length: 4096, eos_token: "<|endoftext|>", tokenizer_class: "PreTrainedTokenizerFast" });
    const tok = JSON.parse(files["tokenizer.json"]!);
    // The shape Dynamo's offline example ships: an unsplit special token, byte-level BPE without unknown fusing.
    expect(tok.added_tokens).toEqual([{ id: 256, content: "<|endoftext|>", single_word: false, lstrip: false, rstrip: false, normalized: false, special: true }]);
    expect(tok.pre_tokenizer).toEqual({ type: "ByteLevel", add_prefix_space: false, trim_offsets: true, use_regex: true });
    expect(tok.decoder).toEqual({ type: "ByteLevel", add_prefix_space: true, trim_offsets: true, use_regex: true });
    expect(tok.model).toMatchObject({ type: "BPE", fuse_unk: false, byte_fallback: false, ignore_merges: false, unk_token: null });
    expect(tok.model.merges).toEqual([]);
    // Every id is in the model's vocabulary once, end of text's too (so a library adding it keeps id 256).
    const ids = Object.values(tok.model.vocab as Record<string, number>).sort((a, b) => a - b);
    expect(ids).toEqual([...Array(32768).keys()]);
    expect(tok.model.vocab["<|endoftext|>"]).toBe(256);
  });

  test("ids 257–32767 are words (Dynamo's mocker emits 1000–1999), each a space and a letter in ByteLevel symbols", () => {
    const words = outputWords();
    expect(Object.keys(words)).toHaveLength(32768 - 257);
    expect(words["\u0120t1000"]).toBe(1000);
    expect(words["\u0120t257"]).toBe(257);
    expect(words["\u0120t32767"]).toBe(32767);
  });
});
