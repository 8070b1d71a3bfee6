import { describe, expect, test } from "bun:test";
import { applyChatTemplate, detokenize, detokenizeOne, tokenize, VOCAB_SIZE } from "./tokenizer.ts";

describe("built-in tokenizer", () => {
  const sentence = "The quick brown fox, 42 times.";

  test("equal text gives equal ids", () => {
    expect(tokenize(sentence)).toEqual(tokenize(sentence));
  });

  test("each word, digit and punctuation mark is one token", () => {
    expect(tokenize(sentence)).toHaveLength(9); // The, quick, brown, fox, ",", 4, 2, times, "."
    expect(tokenize("héllo wörld")).toHaveLength(2);
  });

  test("a shared prefix gives shared leading ids", () => {
    const a = tokenize(sentence);
    const b = tokenize("The quick brown fox jumps");
    expect(b.slice(0, 4)).toEqual(a.slice(0, 4));
  });

  test("ids are integers within the vocabulary", () => {
    expect(tokenize(sentence).every((id) => Number.isInteger(id) && id >= 0 && id < VOCAB_SIZE)).toBe(true);
  });

  test("empty text gives no ids", () => {
    expect(tokenize("")).toEqual([]);
  });

  test("ids render as the same pseudo-words every time", () => {
    expect(detokenizeOne(0)).toBe(" ba");
    expect(detokenize([7, 7])).toBe(detokenizeOne(7).repeat(2));
    expect(detokenizeOne(12_345 + VOCAB_SIZE)).toBe(detokenizeOne(12_345));
    expect(detokenizeOne(49_999)).toMatch(/^ [a-z]+$/);
  });

  test("chat template: one ChatML turn per message, then the assistant's", () => {
    expect(applyChatTemplate([{ role: "system", content: "be brief" }, { role: "user", content: "hi" }])).toBe(
      "<|im_start|>system\nbe brief<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n",
    );
  });
});
