// One request on a server connection, from its head to its answer: what the app got, its body as
// it arrives, where the answer stands, and the context the response writer reads.
import type { RequestHead } from "../../protocol/http1-request.ts";
import type { ArrivingBody } from "./request-body.ts";
import type { ResponseContext } from "./response-writer.ts";
import type { ServerRequest } from "./server-request.ts";

export class Exchange implements ResponseContext {
  /** What the app got (once dispatched). */
  request: ServerRequest | undefined;
  /** The body as the app reads it, while it is still arriving. */
  body: ArrivingBody | undefined;
  /** Body chunks that arrived before the request went to the app. */
  parts: Uint8Array[] | undefined;
  received = 0;
  dispatched = false;
  requestEnded = false;
  /** An answer is being written (the app's, or the server's own error). */
  answered = false;
  /** The answer is out. */
  done = false;
  readonly headOnly: boolean;
  readonly minor: number;
  keepAlive = false;
  date = "";
  reader: ResponseContext["reader"];

  constructor(readonly head: RequestHead) {
    this.headOnly = head.method === "HEAD";
    this.minor = head.minor;
  }

  /** Answered and read in full: the connection may go on to the next request. */
  get finished(): boolean {
    return this.done && this.requestEnded;
  }
}
