// The answers the HTTP server gives itself, in the OpenAI error shape the apps use: a request it
// cannot pass on (malformed, too large: then the connection closes), and an app that failed (500).
import { responseHead } from "../../protocol/http1-response-head.ts";
import { openAiError, openAiErrorBody } from "../../protocol/openai.ts";

/** A whole error response, head and body, ending with `connection: close`. */
export function errorAnswer(status: number, message: string, date: string): Uint8Array {
  const body = Buffer.from(JSON.stringify(openAiErrorBody(status, message)));
  const head = responseHead(status, [["content-type", "application/json"]], date, { kind: "length", length: body.length }, "close");
  return Buffer.concat([Buffer.from(head, "latin1"), body]);
}

/** The app threw, rejected or returned something else than a Response. */
export function appFailed(err: unknown): Response {
  return openAiError(500, `internal error: ${err instanceof Error ? err.message : String(err)}`);
}
