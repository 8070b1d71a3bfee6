// Request bodies as `vllm bench serve` sends them to an OpenAI-compatible server: the prompt as
// token ids or text, max_tokens, streaming with usage (include_usage), and — for fixed output
// lengths — vLLM's ignore_eos + min_tokens extensions (servers that reject unknown fields need
// --no-ignore-eos).
import { isChat } from "../../config/bench.ts";

export interface BodyOptions {
  model: string;
  endpoint: string;
  promptFormat: "tokens" | "text";
  stream: boolean;
  ignoreEos: boolean;
  /** Sampling parameters and --extra-body, merged last (they win over the fields above). */
  extra?: Record<string, unknown>;
}

export function buildBody(o: BodyOptions, tokens: Uint32Array, outputTokens: number): Record<string, unknown> {
  const text = o.promptFormat === "text" ? tokensToText(tokens) : undefined;
  const body: Record<string, unknown> = isChat(o.endpoint)
    ? { model: o.model, messages: [{ role: "user", content: text ?? tokensToText(tokens) }], max_tokens: outputTokens }
    : { model: o.model, prompt: text ?? Array.from(tokens), max_tokens: outputTokens };
  body.temperature = 0;
  if (o.stream) {
    body.stream = true;
    body.stream_options = { include_usage: true };
  }
  if (o.ignoreEos) {
    body.ignore_eos = true;
    body.min_tokens = outputTokens;
  }
  return o.extra ? Object.assign(body, o.extra) : body;
}

const LETTERS = "abcdefghijklmnopqrstuvwxyz";

/**
 * Token ids as text, one lowercase word per id (base 26, a bijection: distinct ids, distinct words),
 * so prompts that share token-id prefixes share text prefixes, whatever the server's
 * tokenizer makes of the words.
 */
export function tokensToText(tokens: Uint32Array): string {
  const words = new Array<string>(tokens.length);
  for (let i = 0; i < tokens.length; i++) words[i] = word(tokens[i]!);
  return words.join(" ");
}

function word(id: number): string {
  let s = "";
  let n = id;
  do {
    s = LETTERS[n % 26]! + s;
    n = Math.floor(n / 26);
  } while (n > 0);
  return s;
}
