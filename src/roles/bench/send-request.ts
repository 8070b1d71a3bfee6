// One benchmark request against an OpenAI-compatible server, timed as vLLM's `bench serve` times
// it: TTFT from just before the request is written to the first chunk carrying content, ITL
// between content chunks, E2E to the end of the stream. Every failure (HTTP status, connection,
// timeout, error chunk, stream cut before [DONE], unparseable chunk) becomes a record, never a throw.
import { readChunk, readUsage, SSE_DONE, SseParser, errorMessage, type StreamUsage } from "../../protocol/openai-stream.ts";
import { classify, postJson } from "../../transport/http/client.ts";

export interface RequestSpec {
  url: string;
  /** Request body (built by buildBody). */
  body: Record<string, unknown>;
  stream: boolean;
  headers: Record<string, string>;
  timeoutMs: number;
  /** Response header naming the serving worker. */
  workerHeader: string;
  /** Prompt length we sent (used when the server reports no usage). */
  inputLength: number;
  /** Aborts the request (Ctrl-C); counted as aborted, apart from the failures. */
  signal?: AbortSignal;
  /** Keep the generated text (--save-detailed's generated_texts). */
  keepText?: boolean;
}

export interface RequestRecord {
  ok: boolean;
  /** error_breakdown key: HTTP status ("500") or cause (timeout, connection, stream_cut, ...). */
  errorKind?: string;
  error?: string;
  /** When the request was sent, ms on the caller's clock. */
  sentMs: number;
  /** NaN until the first content token. */
  ttftMs: number;
  itlMs: number[];
  /**
   * Of those gaps, how many ended at a token that came in the same network read as the one
   * before: the client saw both at once, so such a gap says nothing about the server's spacing.
   */
  itlSameRead?: number;
  e2elMs: number;
  promptTokens: number;
  outputTokens: number;
  /** Cached prompt tokens the server reported; undefined when it did not say. */
  cachedTokens?: number;
  worker?: string;
  /** The serving rank, from the x-kvcr-dp-rank response header (our frontend and mockers send it). */
  dpRank?: number;
  /** The generated text, when the spec asked to keep it. */
  text?: string;
}

/** Response header naming the serving data-parallel rank. */
export const DP_RANK_HEADER = "x-kvcr-dp-rank";

export type Clock = () => number;

export async function sendRequest(spec: RequestSpec, now: Clock): Promise<RequestRecord> {
  const signals = [AbortSignal.timeout(spec.timeoutMs)];
  if (spec.signal) signals.push(spec.signal);
  const signal = AbortSignal.any(signals);
  const sentMs = now();
  const rec: RequestRecord = { ok: false, sentMs, ttftMs: NaN, itlMs: [], e2elMs: NaN, promptTokens: spec.inputLength, outputTokens: 0 };
  const fail = (kind: string, message: string) => {
    rec.ok = false;
    rec.errorKind = kind;
    rec.error = message;
    rec.e2elMs = now() - sentMs;
    return rec;
  };
  let res: Response;
  try {
    res = await postJson(spec.url, spec.body, { headers: spec.headers, signal });
  } catch (err) {
    const e = classify(err, spec.url);
    return fail(e.reason, e.message);
  }
  rec.worker = res.headers.get(spec.workerHeader) ?? undefined;
  const rank = res.headers.get(DP_RANK_HEADER);
  if (rank !== null && /^\d+$/.test(rank)) rec.dpRank = Number(rank);
  try {
    if (res.status !== 200) {
      const text = await res.text().catch(() => "");
      let message = text;
      try {
        message = errorMessage(JSON.parse(text));
      } catch {
        // not JSON: keep the text
      }
      return fail(String(res.status), `HTTP ${res.status}: ${message.slice(0, 200) || res.statusText}`);
    }
    if (spec.keepText) rec.text = "";
    return spec.stream ? await readStream(res, rec, now, fail) : await readWhole(res, rec, now, fail);
  } catch (err) {
    const e = classify(err, spec.url);
    // A body read that fails on its own (not our timeout or abort) is a stream cut by the server.
    if (e.reason === "connection") return fail("stream_cut", `stream cut after ${rec.outputTokens} chunk(s): ${(err as Error).message}`);
    return fail(e.reason, e.reason === "timeout" ? `timed out after ${spec.timeoutMs} ms (${rec.outputTokens} content chunk(s) received)` : e.message);
  } finally {
    if (!res.bodyUsed) await res.body?.cancel().catch(() => {});
  }
}

type Fail = (kind: string, message: string) => RequestRecord;

async function readStream(res: Response, rec: RequestRecord, now: Clock, fail: Fail): Promise<RequestRecord> {
  if (!res.body) return fail("bad_response", "200 response without a body");
  const parser = new SseParser();
  let chunks = 0;
  let last = NaN;
  // E2E latency ends at the last chunk carrying a choice (text or a finish reason), as vLLM's
  // client measures it: not at a trailing usage chunk or [DONE].
  let lastChoice = NaN;
  let usage: StreamUsage | undefined;
  let sameRead = 0;
  for await (const bytes of res.body) {
    let inThisRead = false;
    for (const payload of parser.push(bytes)) {
      // Each message timed as it is read, as vllm bench serve times each SSE message: messages of
      // one read get near-zero gaps, which the result counts apart (itl_same_read_share).
      const t = now();
      if (payload === SSE_DONE) return finish(rec, usage, chunks, Number.isNaN(lastChoice) ? t : lastChoice);
      const c = readChunk(payload);
      if (c.kind === "error") return fail("stream_error", `error in stream: ${c.message}`);
      if (c.kind === "bad") return fail("bad_response", c.message);
      if (c.usage) usage = c.usage;
      if (c.text !== "" || c.finishReason !== undefined) lastChoice = t;
      if (c.text === "") continue;
      if (rec.text !== undefined) rec.text += c.text;
      rec.outputTokens = ++chunks; // so far: a cut stream's error says how far it got
      if (Number.isNaN(rec.ttftMs)) rec.ttftMs = t - rec.sentMs;
      else {
        rec.itlMs.push(t - last);
        if (inThisRead) rec.itlSameRead = ++sameRead;
      }
      inThisRead = true;
      last = t;
    }
  }
  rec.outputTokens = chunks;
  return fail("stream_cut", `stream ended without data: [DONE] after ${chunks} content chunk(s)`);
}

async function readWhole(res: Response, rec: RequestRecord, now: Clock, fail: Fail): Promise<RequestRecord> {
  const text = await res.text();
  const t = now();
  let doc: Record<string, unknown>;
  try {
    doc = JSON.parse(text) as Record<string, unknown>;
  } catch {
    return fail("bad_response", `response is not JSON: ${text.slice(0, 120)}`);
  }
  const choice = (Array.isArray(doc.choices) ? doc.choices[0] : undefined) as Record<string, unknown> | undefined;
  const content = typeof choice?.text === "string" ? choice.text : ((choice?.message as Record<string, unknown> | undefined)?.content as string | undefined);
  if (typeof content !== "string") return fail("bad_response", `response has no choices[0].text or message.content: ${text.slice(0, 120)}`);
  // Without streaming the first token is only seen with the last: TTFT = E2E (as vLLM reports it).
  rec.ttftMs = t - rec.sentMs;
  if (rec.text !== undefined) rec.text = content;
  return finish(rec, readUsage(doc.usage), content === "" ? 0 : 1, t);
}

function finish(rec: RequestRecord, usage: StreamUsage | undefined, chunks: number, t: number): RequestRecord {
  rec.e2elMs = t - rec.sentMs;
  rec.outputTokens = usage?.completionTokens ?? chunks;
  if (usage?.promptTokens !== undefined) rec.promptTokens = usage.promptTokens;
  rec.cachedTokens = usage?.cachedTokens;
  if (chunks === 0) {
    rec.errorKind = "empty_output";
    rec.error = "the response carried no content token";
    return rec;
  }
  rec.ok = true;
  return rec;
}

