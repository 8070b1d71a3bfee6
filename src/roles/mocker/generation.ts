// One generation's trip through a worker's engine, whichever API it came in on (/v1/generate or
// the worker's own OpenAI API), so both yield the same KV events, metrics, truth and faults: the
// HTTP faults planned for its (worker, rank) (error answer, hang, cut, latency), the submit to the
// pool, the client leaving. Only the answer's format differs: an output built by the caller.
import type { GenerateRequest, GenerateSummary } from "../../protocol/generate.ts";
import { openAiError } from "../../protocol/openai.ts";
import type { RequestFaultPlan } from "./faults/http-faults.ts";
import { cuttingSink, delayedSink } from "./faults/http-faults.ts";
import { onClientGone } from "../../transport/http/server-request.ts";
import { directResponse } from "../../transport/http/direct-response.ts";
import { wholeResponse } from "../../transport/http/whole-response.ts";
import { resetBody, TokenStream, type TextFormat, type TokenSink } from "./token-stream.ts";

/** A worker API's answer to a request the stopping process cancelled. */
export const STOPPING = "the worker is stopping: the request was cancelled";
/** An SSE comment while a request waits for its first token: clients skip it, the head goes out. */
export const SSE_HEARTBEAT = ":\n\n";

export type SubmitOutcome = { ok: true; requestId: string } | { ok: false; status: 400 | 404 | 409 | 503; message: string };

/** What a generation needs of the engines. */
export interface Submitter {
  /** A decode request that pulls its KV first answers once the prefill side has (pd/disagg-side.ts). */
  submit(req: GenerateRequest, sink: TokenSink): SubmitOutcome | Promise<SubmitOutcome>;
  cancel(requestId: string): void;
}

/** HTTP faults; `closing` aborts when the process closes (hung requests end). */
export interface RequestFaults {
  plan(worker: number, rank: number): RequestFaultPlan | undefined;
  closing: AbortSignal;
}

/** A request's answer as the engine writes it. */
export interface GenerationOutput {
  /** Where the engine's tokens go (fault wrappers go around it). */
  readonly sink: TokenSink;
  /** The client went away: drop the output. */
  cancel(): void;
  /** The cut_stream fault: what was written goes out, then the connection resets. */
  cut(): void;
  /** The response, once it can be built (at the first output for a stream, at the end for a whole answer). */
  respond(headers: Record<string, string>): Promise<Response>;
}

/**
 * Runs `g` on its (worker, rank): `open(onCancel)` builds the output, whose `onCancel` must run if
 * the client leaves before the end (the request is then cancelled, its blocks freed).
 */
export async function runGeneration(
  req: Request,
  g: GenerateRequest,
  engines: Submitter,
  faults: RequestFaults | undefined,
  open: (onCancel: () => void) => GenerationOutput,
  servedBy: Record<string, string>,
): Promise<Response> {
  const fault = faults?.plan(g.worker, g.dpRank);
  if (fault?.error) return withHeaders(openAiError(fault.error.status, `injected fault ${fault.error.faultId}: http_error ${fault.error.status}`, { code: "injected_fault" }), servedBy);
  if (fault?.hang) return hang(req, faults!.closing);

  let requestId: string | undefined;
  // A client that goes away cancels its request so its blocks are freed.
  const out = open(() => {
    if (requestId !== undefined) engines.cancel(requestId);
  });
  // The client-side end first: a cut counts the tokens that reached the client, after any latency.
  let sink = out.sink;
  if (fault?.cutAfterTokens !== undefined) {
    sink = cuttingSink(sink, fault.cutAfterTokens, () => {
      out.cut();
      if (requestId !== undefined) engines.cancel(requestId);
    });
  }
  let delayed: ReturnType<typeof delayedSink> | undefined;
  if (fault?.latency) sink = delayed = delayedSink(sink, fault.latency.ttftMs, fault.latency.perTokenMs);
  const submitted = engines.submit(g, sink);
  // Only a decode request's submit is a promise: an aggregated one goes on without a turn of the loop.
  const outcome = submitted instanceof Promise ? await submitted : submitted;
  if (!outcome.ok) return withHeaders(openAiError(outcome.status, outcome.message), servedBy);
  requestId = outcome.requestId;
  const gone = () => {
    delayed?.cancel();
    out.cancel();
  };
  // A decode request's submit awaits its pull: the client may have left meanwhile (then gone runs now).
  onClientGone(req, gone);
  return out.respond(servedBy);
}

/** A streamed body (NDJSON without `format`, else its text), headed at the first output; a request already finished by then is one plain body. */
export function streamedOutput(contentHeaders: Record<string, string>, format?: TextFormat): (onCancel: () => void) => GenerationOutput {
  return (onCancel) => {
    const stream = new TokenStream(onCancel, format);
    return {
      sink: stream,
      cancel: () => stream.cancel(),
      cut: () => stream.cut(),
      respond: async (headers) => {
        await stream.firstOutput;
        const whole = stream.takeWholeBody();
        // A whole body says its length (to any server), and ours sends it with its head without reading it back.
        if (whole) return wholeResponse(whole, { headers: { ...contentHeaders, "content-length": String(whole.length), ...headers } });
        return directResponse(stream, { headers: { ...contentHeaders, ...headers } });
      },
    };
  };
}

/** How a whole answer ended. */
export type WholeEnd = { kind: "finished"; ids: number[]; summary: GenerateSummary } | { kind: "cut" } | { kind: "gone" };

/** A non-streamed answer: the tokens are kept until the end, then `build` makes the one body. */
export function wholeOutput(build: (end: WholeEnd & { kind: "finished" }, headers: Record<string, string>) => Response): (onCancel: () => void) => GenerationOutput {
  return (onCancel) => {
    const ids: number[] = [];
    let settle!: (end: WholeEnd) => void;
    const ended = new Promise<WholeEnd>((resolve) => (settle = resolve));
    let done = false;
    const end = (e: WholeEnd) => {
      if (done) return false;
      done = true;
      settle(e);
      return true;
    };
    return {
      sink: {
        tokens: (batch) => {
          if (!done) for (let i = 0; i < batch.length; i++) ids.push(batch[i]!);
        },
        finish: (summary) => void end({ kind: "finished", ids, summary }),
      },
      cancel: () => {
        if (end({ kind: "gone" })) onCancel();
      },
      cut: () => void end({ kind: "cut" }),
      respond: async (headers) => {
        const e = await ended;
        if (e.kind === "cut") return new Response(resetBody(), { headers });
        if (e.kind === "gone") return withHeaders(openAiError(499, "the client went away"), headers);
        return build(e, headers);
      },
    };
  };
}

export function withHeaders(res: Response, headers: Record<string, string>): Response {
  for (const [k, v] of Object.entries(headers)) res.headers.set(k, v);
  return res;
}

/** The hang fault: the request is read and never answered, until the client leaves or the process closes. */
function hang(req: Request, closing: AbortSignal): Promise<Response> {
  return new Promise((resolve) => {
    const end = () => resolve(openAiError(503, "hung by an injected fault; the mocker is closing or the client left"));
    if (closing.aborted || req.signal.aborted) return end();
    req.signal.addEventListener("abort", end, { once: true });
    closing.addEventListener("abort", end, { once: true });
  });
}
