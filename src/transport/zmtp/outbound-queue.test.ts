import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { concat, encodeGreeting, encodeReady, messageWireBytes } from "../../protocol/zmtp/encoder.ts";
import { ZmtpParser } from "../../protocol/zmtp/parser.ts";
import { OutboundQueue, type ByteSink } from "./outbound-queue.ts";

/** A sink that accepts at most `budget` bytes per write call (the kernel buffer stand-in). */
class FakeSink implements ByteSink {
  writes: Uint8Array[] = [];
  budget = Infinity;
  closed = false;
  write(bytes: Uint8Array): number {
    if (this.closed) return -1;
    const n = Math.min(bytes.length, this.budget);
    if (n > 0) this.writes.push(bytes.slice(0, n));
    return n;
  }
  /** Parses everything written as a ZMTP stream (after a synthetic handshake). */
  messages(): number[] {
    const got: number[] = [];
    const parser = new ZmtpParser({ greeting() {}, command() {}, message: (f) => got.push(new DataView(f[0]!.buffer, f[0]!.byteOffset).getUint32(0)) });
    expect(parser.feed(concat([encodeGreeting(), encodeReady("PUB"), ...this.writes]))).toBeUndefined();
    return got;
  }
}

const msg = (n: number, size = 100): Uint8Array[] => {
  const f = new Uint8Array(size);
  new DataView(f.buffer).setUint32(0, n);
  return [f];
};
const push = (q: OutboundQueue, n: number, size = 100) => {
  const m = msg(n, size);
  return q.pushMessage(m, 0, messageWireBytes(m));
};
const tick = () => new Promise<void>((r) => queueMicrotask(r));

describe("OutboundQueue", () => {
  test("a stalled peer's backlog holds about its messages' bytes, not twice their capacity", () => {
    // The kernel takes nothing while the peer is stalled, so every buffer goes to the backlog; on
    // drain, each backlog chunk is written: its buffer's capacity is what the stall pinned.
    let stalled = true;
    const capacities: number[] = [];
    const sink: ByteSink = { write: (b) => (stalled ? 0 : (capacities.push(b.buffer.byteLength), b.length)) };
    const q = new OutboundQueue(sink, 10_000);
    const size = 2_500; // a 32-block vLLM batch
    let bytes = 0;
    for (let i = 0; i < 1_000; i++) {
      expect(push(q, i, size)).toBe(true);
      bytes += messageWireBytes(msg(i, size));
    }
    q.flush();
    expect(q.queuedMessages).toBe(1_000);
    stalled = false;
    q.drain();
    expect(q.queuedMessages).toBe(0);
    const pinned = capacities.reduce((a, b) => a + b, 0);
    expect(pinned / bytes).toBeLessThan(1.1);
  });

  test("coalesces a burst into one write at the end of the tick", async () => {
    const sink = new FakeSink();
    const q = new OutboundQueue(sink, 1000);
    for (let i = 0; i < 100; i++) expect(push(q, i)).toBe(true);
    expect(sink.writes.length).toBe(0);
    await tick();
    expect(sink.writes.length).toBe(1);
    expect(sink.messages()).toEqual(Array.from({ length: 100 }, (_, i) => i));
    expect(q.queuedMessages).toBe(0);
  });

  test("writes at once when 64 KiB are buffered (a synchronous publisher loop is not held back)", () => {
    const sink = new FakeSink();
    const q = new OutboundQueue(sink, 100_000);
    for (let i = 0; i < 1000; i++) push(q, i, 1000);
    expect(sink.writes.length).toBeGreaterThan(10);
    expect(sink.writes.every((w) => w.length <= 130 * 1024)).toBe(true);
  });

  test("kernel backpressure: backlog waits for drain, HWM drops the excess, order is kept", async () => {
    const sink = new FakeSink();
    sink.budget = 250;
    const q = new OutboundQueue(sink, 10);
    const accepted: number[] = [];
    for (let i = 0; i < 50; i++) if (push(q, i)) accepted.push(i);
    await tick();
    expect(q.blocked).toBe(true);
    expect(q.queuedMessages).toBeLessThanOrEqual(10);
    expect(accepted.length).toBeLessThan(50);
    sink.budget = Infinity;
    q.drain();
    expect(q.queuedMessages).toBe(0);
    expect(sink.messages()).toEqual(accepted);
  });

  test("control bytes are never dropped and do not count against the HWM", () => {
    const sink = new FakeSink();
    sink.budget = 0;
    const q = new OutboundQueue(sink, 1);
    expect(push(q, 1)).toBe(true);
    q.flush();
    expect(push(q, 2)).toBe(false);
    q.pushRaw(new Uint8Array([0x04, 0x00]));
    expect(q.queuedMessages).toBe(1);
    // Once the peer drains, the message and then the control bytes are written, nothing lost.
    sink.budget = Infinity;
    q.drain();
    expect(q.blocked).toBe(false);
    const written = concat(sink.writes);
    expect(written.length).toBe(messageWireBytes(msg(1)) + 2);
    expect([...written.subarray(-2)]).toEqual([0x04, 0x00]);
    expect(q.queuedMessages).toBe(0);
  });

  test("a closed sink kills the queue: nothing is kept, later pushes are refused", () => {
    const sink = new FakeSink();
    const q = new OutboundQueue(sink, 10);
    push(q, 1);
    sink.closed = true;
    q.flush();
    expect(q.queuedMessages).toBe(0);
    expect(push(q, 2)).toBe(false);
  });

  test("property: any interleaving of sends, partial writes and drains delivers accepted messages in order, within the HWM", async () => {
    const op = fc.oneof(
      fc.record({ kind: fc.constant("send" as const), size: fc.integer({ min: 4, max: 3000 }) }),
      fc.record({ kind: fc.constant("budget" as const), bytes: fc.integer({ min: 0, max: 5000 }) }),
      fc.record({ kind: fc.constant("drain" as const) }),
      fc.record({ kind: fc.constant("tick" as const) }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(op, { maxLength: 120 }), fc.integer({ min: 1, max: 20 }), async (ops, hwm) => {
        const sink = new FakeSink();
        const q = new OutboundQueue(sink, hwm);
        const accepted: number[] = [];
        let n = 0;
        for (const o of ops) {
          if (o.kind === "send") {
            if (push(q, n, o.size)) accepted.push(n);
            n++;
          } else if (o.kind === "budget") sink.budget = o.bytes;
          else if (o.kind === "drain") q.drain();
          else await tick();
          expect(q.queuedMessages).toBeLessThanOrEqual(hwm);
        }
        sink.budget = Infinity;
        q.drain();
        await tick();
        expect(sink.messages()).toEqual(accepted);
      }),
      { numRuns: 150 },
    );
  });
});
