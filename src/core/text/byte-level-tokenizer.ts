// A Hugging Face tokenizer.json of the one kind kvcr-mock can reproduce exactly: a byte-level BPE
// with no merges (what `model-files` writes, and Dynamo's offline example ships), where every UTF-8
// byte is one token and added tokens (`<|endoftext|>`) are matched whole. Other tokenizers are
// refused by name rather than approximated. Pure: the caller reads the file.
import { byteSymbols } from "./hf-model-files.ts";

export type TextTokenizer = (text: string) => number[];

/** The tokenizer, or why this tokenizer.json is not one kvcr-mock reproduces. */
export function byteLevelTokenizer(json: unknown): TextTokenizer | { problem: string } {
  const t = json as { model?: { type?: unknown; vocab?: unknown; merges?: unknown }; pre_tokenizer?: { type?: unknown } | null; added_tokens?: unknown };
  if (typeof t !== "object" || t === null) return { problem: "not a tokenizer.json object" };
  const model = t.model;
  if (model?.type !== "BPE") return { problem: `model.type is ${JSON.stringify(model?.type)}; only a byte-level BPE without merges is reproduced (as \`kvcr-mock model-files\` writes)` };
  if (!Array.isArray(model.merges) || model.merges.length > 0) return { problem: "model.merges is not empty; only a byte-level BPE without merges (one token per byte) is reproduced" };
  if (t.pre_tokenizer?.type !== "ByteLevel") return { problem: `pre_tokenizer.type is ${JSON.stringify(t.pre_tokenizer?.type)}, not ByteLevel` };
  const vocab = model.vocab as Record<string, unknown> | undefined;
  if (typeof vocab !== "object" || vocab === null) return { problem: "model.vocab is missing" };
  const byByte = new Int32Array(256);
  const symbols = byteSymbols();
  for (let b = 0; b < 256; b++) {
    const id = vocab[symbols[b]!];
    if (typeof id !== "number" || !Number.isInteger(id) || id < 0) return { problem: `model.vocab has no id for byte ${b} (symbol ${JSON.stringify(symbols[b])})` };
    byByte[b] = id;
  }
  const added = (Array.isArray(t.added_tokens) ? t.added_tokens : []).flatMap((a: { content?: unknown; id?: unknown }) => (typeof a.content === "string" && a.content !== "" && typeof a.id === "number" ? [{ content: a.content, id: a.id }] : []));
  const encoder = new TextEncoder();
  const bytes = (text: string, out: number[]) => {
    for (const b of encoder.encode(text)) out.push(byByte[b]!);
  };
  if (added.length === 0) {
    return (text) => {
      const out: number[] = [];
      bytes(text, out);
      return out;
    };
  }
  // Added tokens first, longest first at a place, as the library splits on them before the model runs.
  const sorted = [...added].sort((a, b) => b.content.length - a.content.length);
  const pattern = new RegExp(sorted.map((a) => a.content.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join("|"), "g");
  const idOf = new Map(sorted.map((a) => [a.content, a.id]));
  return (text) => {
    const out: number[] = [];
    let at = 0;
    for (const m of text.matchAll(pattern)) {
      bytes(text.slice(at, m.index), out);
      out.push(idOf.get(m[0])!);
      at = m.index + m[0].length;
    }
    bytes(text.slice(at), out);
    return out;
  };
}
