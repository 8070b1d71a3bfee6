// A request body still arriving from the socket, handed to the app as a ReadableStream: chunks are
// queued up to a high-water mark, past which the socket stops reading until the app pulls again
// (TCP back-pressure instead of buffering a fast client's upload). The connection ends it or errors it.

/** What the body asks of its connection. */
export interface BodyFlow {
  /** The app has enough queued: stop reading the socket. */
  pauseBody(): void;
  /** The app wants more, or stopped wanting any: read the socket again. */
  resumeBody(): void;
}

const HIGH_WATER_BYTES = 64 * 1024;

export class ArrivingBody {
  readonly stream: ReadableStream<Uint8Array>;
  private controller!: ReadableStreamDefaultController<Uint8Array>;
  /** The app cancelled its read (it stopped wanting the body): the rest is dropped. */
  cancelled = false;
  private settled = false;

  constructor(
    private readonly flow: BodyFlow,
    first: readonly Uint8Array[],
  ) {
    this.stream = new ReadableStream<Uint8Array>(
      {
        start: (controller: ReadableStreamDefaultController<Uint8Array>) => {
          this.controller = controller;
          for (const chunk of first) controller.enqueue(chunk);
        },
        pull: () => this.flow.resumeBody(),
        cancel: () => {
          this.cancelled = true;
          this.settled = true;
          this.flow.resumeBody();
        },
      },
      { highWaterMark: HIGH_WATER_BYTES, size: (chunk: Uint8Array) => chunk.byteLength } as QueuingStrategy<Uint8Array>,
    );
  }

  push(chunk: Uint8Array): void {
    if (this.settled) return;
    this.controller.enqueue(chunk);
    if ((this.controller.desiredSize ?? 1) <= 0) this.flow.pauseBody();
  }

  /** The body's last byte arrived. */
  end(): void {
    if (this.settled) return;
    this.settled = true;
    this.controller.close();
  }

  /** The body will not arrive in full (the client left, or its framing broke): the app's read fails with `err`. */
  fail(err: Error): void {
    if (this.settled) return;
    this.settled = true;
    this.controller.error(err);
  }
}
