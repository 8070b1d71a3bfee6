// OpenAI streaming responses as a client reads them: a server-sent-events parser (bytes in,
// `data:` payloads out, split anywhere) and the reading of one completion or chat chunk (its
// content text, usage, or an in-stream error). Pure: the socket lives in transport/.

export interface StreamUsage {
  promptTokens?: number;
  completionTokens?: number;
  /** usage.prompt_tokens_details.cached_tokens; undefined when the server does not say. */
  cachedTokens?: number;
}

export type ChunkReading =
  | { kind: "chunk"; text: string; usage?: StreamUsage; finishReason?: string }
  | { kind: "error"; message: string }
  | { kind: "bad"; message: string };

const LF = 10;
const CR = 13;

/**
 * Incremental SSE parser (the WHATWG event-stream rules a client needs): lines end in LF, CRLF
 * or CR, an empty line ends an event, `data:` lines are joined with "\n", comments and other
 * fields are ignored. Bytes may be split anywhere, also inside a UTF-8 sequence.
 */
export class SseParser {
  private readonly decoder = new TextDecoder();
  private line = "";
  private data: string[] = [];
  private sawCr = false;

  /** Feeds bytes; returns the data payloads of the events they completed. */
  push(bytes: Uint8Array): string[] {
    return this.text(this.decoder.decode(bytes, { stream: true }));
  }

  /** Events completed by `chunk` (already decoded text). */
  text(chunk: string): string[] {
    const out: string[] = [];
    let start = 0;
    for (let i = 0; i < chunk.length; i++) {
      const c = chunk.charCodeAt(i);
      if (c !== LF && c !== CR) continue;
      if (c === LF && this.sawCr && i === start && this.line === "") {
        // The LF of a CRLF whose CR ended the previous line.
        this.sawCr = false;
        start = i + 1;
        continue;
      }
      this.sawCr = c === CR;
      this.endLine(this.line + chunk.slice(start, i), out);
      this.line = "";
      start = i + 1;
    }
    if (start < chunk.length) {
      this.sawCr = false;
      this.line += chunk.slice(start);
    }
    return out;
  }

  private endLine(line: string, out: string[]): void {
    if (line === "") {
      if (this.data.length > 0) out.push(this.data.join("\n"));
      this.data = [];
      return;
    }
    if (line.startsWith(":")) return;
    const colon = line.indexOf(":");
    const field = colon === -1 ? line : line.slice(0, colon);
    if (field !== "data") return;
    let value = colon === -1 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    this.data.push(value);
  }
}

/** The end-of-stream sentinel of OpenAI-compatible servers. */
export const SSE_DONE = "[DONE]";

/** Reads one `data:` payload of a /v1/completions or /v1/chat/completions stream. */
export function readChunk(payload: string): ChunkReading {
  let doc: unknown;
  try {
    doc = JSON.parse(payload);
  } catch (err) {
    return { kind: "bad", message: `stream chunk is not JSON (${(err as Error).message}): ${preview(payload)}` };
  }
  if (typeof doc !== "object" || doc === null || Array.isArray(doc)) return { kind: "bad", message: `stream chunk is not a JSON object: ${preview(payload)}` };
  const o = doc as Record<string, unknown>;
  if (o.error !== undefined && o.error !== null) return { kind: "error", message: errorMessage(o.error) };
  let text = "";
  let finishReason: string | undefined;
  if (Array.isArray(o.choices)) {
    for (const choice of o.choices as unknown[]) {
      if (typeof choice !== "object" || choice === null) continue;
      const c = choice as Record<string, unknown>;
      if (typeof c.text === "string") text += c.text;
      const delta = c.delta as Record<string, unknown> | undefined;
      if (delta && typeof delta === "object") {
        if (typeof delta.content === "string") text += delta.content;
        // Reasoning models stream their thinking first; it is output all the same (vLLM counts it).
        if (typeof delta.reasoning_content === "string") text += delta.reasoning_content;
      }
      if (typeof c.finish_reason === "string") finishReason = c.finish_reason;
    }
  }
  const usage = readUsage(o.usage);
  return { kind: "chunk", text, usage, finishReason };
}

export function readUsage(u: unknown): StreamUsage | undefined {
  if (typeof u !== "object" || u === null) return undefined;
  const o = u as Record<string, unknown>;
  const num = (v: unknown) => (typeof v === "number" && Number.isFinite(v) && v >= 0 ? v : undefined);
  const details = o.prompt_tokens_details;
  const cached = typeof details === "object" && details !== null ? num((details as Record<string, unknown>).cached_tokens) : undefined;
  return { promptTokens: num(o.prompt_tokens), completionTokens: num(o.completion_tokens), cachedTokens: cached };
}

/** The message of an OpenAI error body (`{"error": {...}}` or its inner value). */
export function errorMessage(e: unknown): string {
  if (typeof e === "string") return e;
  if (typeof e === "object" && e !== null) {
    const o = e as Record<string, unknown>;
    if (typeof o.error === "object" && o.error !== null) return errorMessage(o.error);
    if (typeof o.message === "string") return o.message;
  }
  return preview(JSON.stringify(e) ?? String(e));
}

function preview(s: string): string {
  return s.length > 120 ? `${s.slice(0, 117)}...` : s;
}
