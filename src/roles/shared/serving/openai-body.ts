// How every OpenAI-shaped route (the frontend's, and each mock worker's own API) reads a request:
// the body within its size cap (413) and deadline (408, connection closed), a client gone mid-body
// (499, logged at debug), JSON or 400; and a parsed generation request's prompt as token ids, on the
// one built-in tokenizer and chat template, so usage counts agree wherever a prompt is sent.
import { applyChatTemplate, tokenize } from "../../../core/text/tokenizer.ts";
import { LOG_LEVELS, type Logger } from "../../../lib/logger.ts";
import { readCapped } from "../../../lib/read-capped.ts";
import { openAiError, type GenerationRequest } from "../../../protocol/openai.ts";
import { bodyBytesInHand } from "../../../transport/http/server-request.ts";

export interface BodyCaps {
  /** Largest body in bytes (413 above). */
  maxRequestBytes: number;
  /** A body not fully arrived within this many ms gets 408 and its connection closed. */
  bodyTimeoutMs: number;
}

/** The body as JSON, within the caps (413, 408, 499), or the error answer (400 when not JSON). */
export async function readJsonBody(req: Request, caps: BodyCaps, logger: Logger, path: string): Promise<{ json: unknown } | Response> {
  const raw = await readBody(req, caps.maxRequestBytes, caps.bodyTimeoutMs, logger, path);
  if (raw instanceof Response) return raw;
  try {
    return { json: JSON.parse(raw) as unknown };
  } catch (err) {
    return openAiError(400, `body is not valid JSON: ${(err as Error).message}`, { param: "body" });
  }
}

/** A parsed completion or chat request's prompt as token ids (a token-id prompt is used as is); `tok` tokenizes text (kvcr-mock's own by default). */
export function promptTokens(r: GenerationRequest, tok: (text: string) => number[] = tokenize): number[] {
  if (r.messages) return tok(applyChatTemplate(r.messages));
  const p = r.prompt!;
  return p.kind === "tokens" ? p.ids : tok(p.text);
}

const tooLarge = (n: string, max: number) => openAiError(413, `request body of ${n} bytes exceeds the limit of ${max} bytes (--max-request-bytes)`, { code: "request_too_large" });

const bodyTimeout = (ms: number) =>
  openAiError(408, `the request body did not arrive in full within ${ms} ms (--body-timeout-ms)`, { code: "request_timeout" });

/**
 * The body as text; or a 413 when it exceeds `max` bytes (read with a cap, never fully buffered);
 * a 408 when it has not arrived within `timeoutMs` (reading stops, and `connection: close` makes
 * the server drop the connection after the answer); a 499 when the client went away mid-body
 * (logged at debug: a client's doing, not a fault of ours).
 */
async function readBody(req: Request, max: number, timeoutMs: number, logger: Logger, path: string): Promise<string | Response> {
  // A body that came whole with its head: nothing to wait for and nothing unbounded to read.
  const inHand = bodyBytesInHand(req);
  if (inHand !== undefined) return inHand > max ? tooLarge(String(inHand), max) : req.text();
  const length = req.headers.get("content-length");
  const declared = Number(length ?? NaN);
  if (declared > max) return tooLarge(String(declared), max);
  let timer: ReturnType<typeof setTimeout> | undefined;
  const expired = new Promise<"timeout">((resolve) => (timer = setTimeout(resolve, timeoutMs, "timeout")));
  // A declared length within the limit: one read (Bun holds no more than it declared).
  const reader = length !== null && declared >= 0 ? undefined : req.body?.getReader();
  const read = reader ? readCapped(reader, max).then((text) => text ?? tooLarge(`more than ${max}`, max)) : req.text();
  try {
    const out = await Promise.race([read, expired]);
    if (out !== "timeout") return out;
    read.catch(() => {}); // settles (or not) after the answer; nobody waits for it
    if (reader) void reader.cancel().catch(() => {});
    const res = bodyTimeout(timeoutMs);
    res.headers.set("connection", "close");
    return res;
  } catch (err) {
    if (logger.level >= LOG_LEVELS.debug) logger.debug(`${req.method} ${path}: the client went away while sending its body (${err instanceof Error ? err.message || err.name : String(err)})`);
    return openAiError(499, "the client closed the connection while sending its body", { code: "client_closed" });
  } finally {
    clearTimeout(timer);
  }
}
