// The frontend's deterministic built-in tokenizer and chat template. Not a real
// vocabulary: text splits into words, digits and single punctuation marks (each with its leading
// whitespace), and each piece hashes (FNV-1a 32) into a 50,000-id space, so equal text gives equal
// token ids and shared prefixes give shared blocks. Generated ids render back as pronounceable
// pseudo-words, deterministically. Chat uses a fixed ChatML-style template.

export const VOCAB_SIZE = 50_000;

const PIECE = /\s*[\p{L}\p{M}]+|\s*\p{N}|\s*[^\s\p{L}\p{M}\p{N}]|\s+/gu;

function fnv1a(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

export function tokenize(text: string): number[] {
  const pieces = text.match(PIECE) ?? [];
  const ids = new Array<number>(pieces.length);
  for (let i = 0; i < pieces.length; i++) ids[i] = fnv1a(pieces[i]!) % VOCAB_SIZE;
  return ids;
}

const CONSONANTS = "bdfgklmnprstvz";
const VOWELS = "aeiou";

/** " " + 1–3 consonant-vowel syllables spelling the id (mod the vocabulary size). */
export function detokenizeOne(id: number): string {
  let x = id % VOCAB_SIZE;
  let word = "";
  do {
    word += CONSONANTS[x % CONSONANTS.length]! + VOWELS[Math.floor(x / CONSONANTS.length) % VOWELS.length]!;
    x = Math.floor(x / (CONSONANTS.length * VOWELS.length));
  } while (x > 0);
  return ` ${word}`;
}

export function detokenize(ids: ArrayLike<number>): string {
  let out = "";
  for (let i = 0; i < ids.length; i++) out += detokenizeOne(ids[i]!);
  return out;
}

/**
 * The same template in Jinja, for the tokenizer_config.json that `kvcr-mock model-files` writes
 * (Hugging Face clients render it); a test renders it with transformers against applyChatTemplate.
 * Newlines are Jinja string escapes: Jinja drops a template's own trailing newline.
 */
export const CHAT_TEMPLATE_JINJA =
  "{% for m in messages %}{{ '<|im_start|>' + m.role + '\\n' + m.content + '<|im_end|>\\n' }}{% endfor %}{{ '<|im_start|>assistant\\n' }}";

/** ChatML-style: `<|im_start|>{role}\n{content}<|im_end|>\n` per message, then the assistant turn. */
export function applyChatTemplate(messages: readonly { role: string; content: string }[]): string {
  let text = "";
  for (const m of messages) text += `<|im_start|>${m.role}\n${m.content}<|im_end|>\n`;
  return `${text}<|im_start|>assistant\n`;
}
