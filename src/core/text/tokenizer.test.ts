import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { applyChatTemplate, detokenize, detokenizeOne, tokenize, VOCAB_SIZE } from "./tokenizer.ts";

/** FNV-1a 32 over UTF-16 code units, in BigInt arithmetic: a reference written apart from tokenize()'s. */
function referenceId(piece: string): number {
  let h = 2166136261n;
  for (let i = 0; i < piece.length; i++) h = ((h ^ BigInt(piece.charCodeAt(i))) * 16777619n) % 2n ** 32n;
  return Number(h % 50_000n);
}

describe("built-in tokenizer", () => {
  const sentence = "The quick brown fox, 42 times.";

  test("golden ids: each piece's FNV-1a 32 modulo the vocabulary", () => {
    const pieces = ["The", " quick", " brown", " fox", ",", " 4", "2", " times", "."];
    const golden = [44636, 34402, 16721, 11340, 40635, 21153, 27301, 9063, 45873];
    expect(pieces.map(referenceId)).toEqual(golden);
    expect(tokenize(sentence)).toEqual(golden);
    expect(tokenize("Hello, world!")).toEqual([9851, 40635, 6637, 2540]);
    expect(tokenize(" é")).toEqual([referenceId(" é")]);
  });

  test("a word tokenizes to its reference id; distinct words almost always get distinct ids", () => {
    const word = fc.string({ minLength: 1, maxLength: 12, unit: fc.constantFrom(..."abcdefghijklmnopqrstuvwxyzé") });
    fc.assert(
      fc.property(word, (w) => {
        expect(tokenize(` ${w}`)).toEqual([referenceId(` ${w}`)]);
      }),
      { numRuns: 300, seed: 20260514 },
    );
    // 2,000 distinct words in 50,000 ids: about 40 collide by the birthday bound, far from all.
    const letters = (n: number): string => String.fromCharCode(97 + (n % 26)) + (n >= 26 ? letters(Math.floor(n / 26) - 1) : "");
    const words = Array.from({ length: 2000 }, (_, i) => ` ${letters(i)}`);
    expect(new Set(words).size).toBe(2000);
    const ids = new Set(words.map((w) => tokenize(w)[0]));
    expect(ids.size).toBeGreaterThan(1900);
  });

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
