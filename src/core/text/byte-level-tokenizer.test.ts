import { describe, expect, test } from "bun:test";
import { byteLevelTokenizer } from "./byte-level-tokenizer.ts";
import { byteSymbols, hfModelFiles } from "./hf-model-files.ts";

const files = JSON.parse(hfModelFiles({ maxModelLen: 1024 })["tokenizer.json"]!) as Record<string, any>;
const tok = byteLevelTokenizer(files) as (text: string) => number[];

describe("byte-level tokenizer (model-files' tokenizer.json)", () => {
  test("one id per UTF-8 byte, the added token whole; ids as the vocabulary maps each byte's symbol", () => {
    // The ids transformers gives for the same files (test/peers/model-files.test.ts checks them against the library itself).
    expect(tok("Hi")).toEqual([files.model.vocab["H"], files.model.vocab["i"]]);
    expect(tok("é")).toEqual([...new TextEncoder().encode("é")].map((b) => files.model.vocab[byteSymbols()[b]!]));
    expect(tok("a<|endoftext|>b")).toEqual([files.model.vocab["a"], 256, files.model.vocab["b"]]);
    expect(tok("Héllo, wörld! 你好").length).toBe(new TextEncoder().encode("Héllo, wörld! 你好").length);
    expect(tok("")).toEqual([]);
    // A space is byte 32, GPT-2's "Ġ".
    expect(tok(" ")).toEqual([files.model.vocab["Ġ"]]);
  });

  test("tokenizers it cannot reproduce are named", () => {
    const problem = (t: unknown) => (byteLevelTokenizer(t) as { problem: string }).problem;
    expect(problem({ ...files, model: { ...files.model, type: "WordPiece" } })).toStartWith('model.type is "WordPiece"; only a byte-level BPE without merges');
    expect(problem({ ...files, model: { ...files.model, merges: ["a b"] } })).toStartWith("model.merges is not empty");
    expect(problem({ ...files, pre_tokenizer: { type: "Whitespace" } })).toBe('pre_tokenizer.type is "Whitespace", not ByteLevel');
    expect(problem({ ...files, model: { ...files.model, vocab: { a: 1 } } })).toStartWith("model.vocab has no id for byte 0");
    expect(problem(null)).toBe("not a tokenizer.json object");
  });
});
