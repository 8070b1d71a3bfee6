// One HTTP/1.x connection of the server: one request at a time to the app, its answer out before the
// next is parsed (pipelined bytes wait, answered in order; past HELD_LIMIT held the socket stops
// reading), and the request's signal aborted when the client leaves before its answer is out.
import type { Socket } from "bun";
import { Http1RequestError, Http1RequestParser, type RequestHead, type RequestLimits, type RequestSink } from "../../protocol/http1-request.ts";
import { Exchange } from "./exchange.ts";
import { ArrivingBody, type BodyFlow } from "./request-body.ts";
import { writeResponse, type WriteOutcome } from "./response-writer.ts";
import { errorAnswer } from "./server-answers.ts";
import { ServerRequest } from "./server-request.ts";
import { SocketOutput } from "./socket-output.ts";

/** What a connection needs from its server. */
export interface ConnectionServer {
  readonly fetch: (req: Request) => Response | Promise<Response>;
  readonly limits: RequestLimits;
  /** host:port the server listens on: the URL's authority for a request without Host (HTTP/1.0). */
  readonly ownHost: string;
  /** stop() was called: no connection is kept past its current request. */
  readonly stopping: boolean;
  /** The Date field's value now. */
  date(): string;
  /** The answer when the app throws or rejects. */
  failed(err: unknown): Response;
  /** Reports a fault of the server's own code. */
  fault(err: unknown): void;
  /** Called once, when the connection is gone. */
  forget(conn: ServerConnection): void;
}

/** Pipelined bytes held while a request is answered; past this the socket stops reading until the answer is out. */
export const HELD_LIMIT = 64 * 1024;
/** Unread body bytes still discarded after an early answer to keep the connection; a longer rest closes it. */
const DRAIN_LIMIT = 256 * 1024;
const CONTINUE = new TextEncoder().encode("HTTP/1.1 100 Continue\r\n\r\n");

export class ServerConnection implements RequestSink, BodyFlow {
  private lastRead = performance.now();
  private gone = false;
  private readonly parser: Http1RequestParser;
  private readonly output: SocketOutput;
  private current: Exchange | undefined;
  private held: Uint8Array[] = [];
  private heldBytes = 0;
  private pausedForBody = false;
  private pausedForHeld = false;
  /** The connection is closing after its last answer: input is dropped, the socket ends once output drains. */
  private ending = false;
  private endingSince = 0;

  constructor(
    private readonly socket: Socket<ServerConnection>,
    private readonly server: ConnectionServer,
  ) {
    this.parser = new Http1RequestParser(this, server.limits);
    this.output = new SocketOutput(socket, () => this.onClose());
  }

  // ---- socket events ----

  onData(chunk: Uint8Array): void {
    this.lastRead = performance.now();
    if (this.ending || this.gone) return;
    if (this.held.length > 0) return this.hold(chunk);
    this.parse(chunk, 0);
  }

  onDrain(): void {
    if (!this.output.flush()) return;
    if (this.ending) this.socket.end();
    else this.next();
  }

  /** The socket closed (the client left, or we closed it). */
  onClose(): void {
    if (this.gone) return;
    this.gone = true;
    const ex = this.current;
    if (ex !== undefined) {
      if (!ex.requestEnded) ex.body?.fail(new Error("the client closed the connection before its request body arrived in full"));
      if (!ex.done) {
        ex.request?.abort(new DOMException("the client closed the connection", "AbortError"));
        void ex.reader?.cancel().catch(() => {});
      }
    }
    this.output.close();
    this.server.forget(this);
  }

  /** Closes the connection now, whatever is in flight (stop(true), a broken body, a stalled client). */
  terminate(): void {
    this.socket.terminate();
    this.onClose();
  }

  /** Called by the server's sweep: ends a connection that waits on its client longer than `idleMs`. */
  checkIdle(now: number, idleMs: number, lingerMs: number): void {
    if (this.gone) return;
    if (this.ending) {
      if (now - this.endingSince > lingerMs) this.terminate();
      return;
    }
    // Waiting on the client: for a request, for the rest of a body, or for it to read what we sent.
    // An app still working on an answer is not idle; its own timeouts govern it.
    const ex = this.current;
    const waitingOnClient = ex === undefined || !ex.requestEnded || this.output.queuedBytes > 0;
    if (!waitingOnClient || now - Math.max(this.lastRead, this.output.lastWrite) <= idleMs) return;
    if (ex === undefined && !this.parser.inMessage) this.endGracefully();
    else this.terminate();
  }

  /** stop() without force: a connection with no request at the app ends now (a head in part is dropped), a busy one after its answer. */
  closeWhenIdle(): void {
    if (this.current === undefined) this.endGracefully();
  }

  // ---- the parser's sink ----

  head(head: RequestHead): void {
    this.current = new Exchange(head);
  }

  body(chunk: Uint8Array): void {
    const ex = this.current!;
    ex.received += chunk.length;
    if (ex.body !== undefined) ex.body.push(chunk);
    else if (!ex.dispatched) (ex.parts ??= []).push(chunk);
  }

  end(): void {
    const ex = this.current!;
    ex.requestEnded = true;
    ex.body?.end();
  }

  // ---- requests in ----

  private parse(chunk: Uint8Array, pos: number): void {
    try {
      while (pos < chunk.length) {
        if (this.gone || this.ending) return;
        const cur = this.current;
        if (cur !== undefined && cur.requestEnded) {
          // A request is being answered: what follows waits its turn.
          if (!cur.done || this.output.queuedBytes > 0) return this.hold(pos === 0 ? chunk : chunk.subarray(pos));
          this.current = undefined;
        }
        pos = this.parser.feed(chunk, pos);
        const ex = this.current;
        if (ex !== undefined && !ex.dispatched) this.dispatch(ex);
      }
    } catch (err) {
      if (err instanceof Http1RequestError) return this.refuse(err);
      throw err;
    }
    // A body drained after an early answer ended at this chunk's end: go on with what is held.
    if (this.current?.finished) this.next();
  }

  private hold(chunk: Uint8Array): void {
    this.held.push(chunk);
    this.heldBytes += chunk.length;
    if (this.heldBytes > HELD_LIMIT && !this.pausedForHeld) {
      this.pausedForHeld = true;
      this.socket.pause();
    }
  }

  private dispatch(ex: Exchange): void {
    ex.dispatched = true;
    const head = ex.head;
    const target = head.target;
    let url: string;
    if (target.charCodeAt(0) === 47) url = `http://${head.host ?? this.server.ownHost}${target}`;
    else if (/^https?:\/\//i.test(target) && URL.canParse(target)) url = target;
    else throw new Http1RequestError(400, `the request target must be a path or an absolute http URL, not ${JSON.stringify(target.slice(0, 80))}`);
    let body: Uint8Array | ReadableStream<Uint8Array> | undefined;
    const parts = ex.parts;
    ex.parts = undefined;
    if (ex.requestEnded) {
      if (parts !== undefined) body = parts.length === 1 ? parts[0] : Buffer.concat(parts);
    } else {
      ex.body = new ArrivingBody(this, parts ?? []);
      body = ex.body.stream;
      if (head.expectContinue) this.output.send(CONTINUE);
    }
    const req = new ServerRequest(head.method, url, head.headers, body);
    ex.request = req;
    let result: Response | Promise<Response>;
    try {
      result = this.server.fetch(req);
    } catch (err) {
      result = this.server.failed(err);
    }
    if (result instanceof Promise) result.then(this.onAnswer, this.onAppFailure);
    else this.respond(ex, result);
  }

  // ---- answers out ----
  // One request at a time per connection: the app's answer is for the current exchange (it is
  // replaced only once answered), so these callbacks are made once per connection, not per request.

  private readonly onAnswer = (res: Response): void => this.respond(this.current!, res);
  private readonly onAppFailure = (err: unknown): void => this.respond(this.current!, this.server.failed(err));
  private readonly onWritten = (outcome: WriteOutcome): void => this.responded(this.current!, outcome);
  private readonly onWriteFailure = (err: unknown): void => {
    this.server.fault(err);
    this.terminate();
  };

  private respond(ex: Exchange, res: Response): void {
    if (ex.answered || this.gone) {
      // The server answered already (a broken request body), or the client left: the app's answer goes nowhere.
      void res?.body?.cancel().catch(() => {});
      return;
    }
    if (!(res instanceof Response)) res = this.server.failed(new TypeError(`the handler returned ${res === null ? "null" : typeof res}, not a Response`));
    ex.answered = true;
    const head = ex.head;
    // An answer before the whole body: a short rest is read and dropped to keep the connection; a long one closes it.
    const drainable = ex.requestEnded || (!head.chunked && head.contentLength - ex.received <= DRAIN_LIMIT);
    ex.keepAlive = head.keepAlive && drainable && !this.server.stopping;
    ex.date = this.server.date();
    let written: WriteOutcome | Promise<WriteOutcome>;
    try {
      written = writeResponse(this.output, res, ex);
    } catch (err) {
      return this.onWriteFailure(err);
    }
    if (typeof written === "string") this.responded(ex, written);
    else written.then(this.onWritten, this.onWriteFailure);
  }

  private responded(ex: Exchange, outcome: WriteOutcome): void {
    ex.done = true;
    if (this.gone) return;
    if (outcome === "reset") return this.terminate();
    if (!ex.requestEnded) {
      // The app answered without reading all of its body: it will not get the rest.
      ex.body?.fail(new Error("the response was sent before the request body was read"));
      ex.body = undefined;
      this.resumeBody();
    }
    // cut: the body broke off; ending the connection without its last chunk tells the client so.
    if (outcome === "close" || outcome === "cut") return this.endGracefully();
    this.next();
  }

  /** The current request is answered and read: the next one (held pipelined bytes first). */
  private next(): void {
    const cur = this.current;
    if (this.gone || this.ending || this.output.queuedBytes > 0 || (cur !== undefined && !cur.finished)) return;
    this.current = undefined;
    if (this.server.stopping) return this.endGracefully();
    const held = this.held;
    this.held = [];
    this.heldBytes = 0;
    if (this.pausedForHeld) {
      this.pausedForHeld = false;
      if (!this.pausedForBody) this.socket.resume();
    }
    for (let i = 0; i < held.length; i++) {
      if (this.held.length > 0) {
        // Parsing stopped at another request's end: the rest keeps its place in line.
        for (const c of held.slice(i)) this.hold(c);
        return;
      }
      this.parse(held[i]!, 0);
    }
  }

  /** The server's own answer to a request it cannot pass on (malformed, too large): then the connection closes. */
  private refuse(err: Http1RequestError): void {
    const ex = this.current;
    if (ex !== undefined) {
      ex.body?.fail(err);
      if (!ex.done) ex.request?.abort(err);
      // Mid-answer (the app's head may be out) nothing more can be said on this connection.
      if (ex.answered) return ex.done ? this.endGracefully() : this.terminate();
      ex.answered = true;
    }
    this.output.send(errorAnswer(err.status, err.message, this.server.date()));
    this.endGracefully();
  }

  private endGracefully(): void {
    if (this.ending || this.gone) return;
    this.ending = true;
    this.endingSince = performance.now();
    // Keep reading (and dropping) until the client closes too, so its last bytes do not turn our close into a reset.
    this.pausedForBody = this.pausedForHeld = false;
    this.socket.resume();
    if (this.output.queuedBytes === 0) this.socket.end();
  }

  // ---- BodyFlow ----

  pauseBody(): void {
    if (this.pausedForBody) return;
    this.pausedForBody = true;
    this.socket.pause();
  }

  resumeBody(): void {
    if (!this.pausedForBody) return;
    this.pausedForBody = false;
    if (!this.pausedForHeld) this.socket.resume();
  }
}
