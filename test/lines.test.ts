// readLines and LineQueue on hand-fed streams: lines split across chunks and characters split
// across chunks, the unterminated tail, each line handed out once, the bounded wait and its errors.
import { describe, expect, test } from "bun:test";
import { LineQueue, readLines } from "./lines.ts";

/** A stream the test feeds chunk by chunk. */
function feed() {
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  const stream = new ReadableStream<Uint8Array>({ start: (c) => void (controller = c) });
  const te = new TextEncoder();
  return {
    stream,
    push: (chunk: string | Uint8Array) => controller.enqueue(typeof chunk === "string" ? te.encode(chunk) : chunk),
    end: () => controller.close(),
  };
}

describe("readLines", () => {
  test("lines and multi-byte characters split across chunks are joined, an unterminated tail dropped", async () => {
    const f = feed();
    const euro = new TextEncoder().encode("€"); // 3 bytes
    f.push("a\nb");
    f.push("c\n\nd");
    f.push(euro.subarray(0, 1));
    f.push(euro.subarray(1));
    f.push("\ncut");
    f.end();
    const lines: string[] = [];
    for await (const l of readLines(f.stream)) lines.push(l);
    expect(lines).toEqual(["a", "bc", "", "d€"]);
  });
});

describe("LineQueue", () => {
  test("next() waits for a matching line, hands each line out once, and keeps the transcript", async () => {
    const f = feed();
    const seen: number[] = [];
    const q = new LineQueue(f.stream, (l) => Number(l), (n) => seen.push(n));
    const even = q.next((n) => n % 2 === 0, 5_000);
    f.push("1\n3\n4\n");
    expect(await even).toBe(4);
    expect(await q.next((n) => n % 2 === 0, 0).catch((e: Error) => e.message)).toMatch(/timed out after 0 ms/);
    expect(await q.next()).toBe(1);
    expect(await q.next()).toBe(3);
    f.push("6\n");
    expect(await q.next()).toBe(6);
    expect(q.lines).toEqual([1, 3, 4, 6]);
    expect(seen).toEqual([1, 3, 4, 6]);
  });

  test("two waits for the same line: only one gets it", async () => {
    const f = feed();
    const q = new LineQueue(f.stream);
    const first = q.next((l) => l.startsWith("x"), 5_000);
    const second = q.next((l) => l.startsWith("x"), 5_000);
    f.push("x1\n");
    expect(await first).toBe("x1");
    f.push("x2\n");
    expect(await second).toBe("x2");
    expect(q.lines).toEqual(["x1", "x2"]);
  });

  test("rejects when the stream ends without a match, naming what it waited for (read when it fails)", async () => {
    const f = feed();
    const q = new LineQueue(f.stream);
    let context = "before";
    const wait = q.next((l) => l === "ready", 5_000, () => `ready (${context})`);
    f.push("starting\n");
    context = "after";
    f.end();
    expect(await wait.catch((e: Error) => e.message)).toBe("the stream ended before ready (after)");
  });

  test("a throwing match fails only its own wait, the queue reading on", async () => {
    const f = feed();
    const q = new LineQueue(f.stream);
    f.push("a\n");
    expect(await q.next(() => { throw new Error("bad matcher"); }, 5_000).catch((e: Error) => e.message)).toBe("bad matcher");
    f.push("b\n");
    expect(await q.next((l) => l === "b", 5_000)).toBe("b");
  });
});
