// Reading an OpenAI body within its caps, both ways a body reaches an app: whole with its head
// (our server's request: read at once, its size checked against the cap) and still arriving (a
// stream: the capped read, the deadline).
import { describe, expect, test } from "bun:test";
import { createLogger } from "../../../lib/logger.ts";
import { ServerRequest } from "../../../transport/http/server-request.ts";
import { readJsonBody } from "./openai-body.ts";

const logger = createLogger({ level: "error", tag: "test" });
const caps = { maxRequestBytes: 16, bodyTimeoutMs: 200 };
const inHand = (text: string) => new ServerRequest("POST", "http://f/v1/completions", ["host", "f", "content-length", String(Buffer.byteLength(text))], new TextEncoder().encode(text));
const arriving = (...parts: string[]) =>
  new ServerRequest("POST", "http://f/v1/completions", ["host", "f", "transfer-encoding", "chunked"], new ReadableStream({
    start(c) {
      for (const p of parts) c.enqueue(new TextEncoder().encode(p));
      c.close();
    },
  }));

async function errorOf(out: { json: unknown } | Response): Promise<[number, string]> {
  if (!(out instanceof Response)) throw new Error(`expected an error answer, got ${JSON.stringify(out.json)}`);
  return [out.status, ((await out.json()) as { error: { message: string } }).error.message];
}

describe("a body in hand", () => {
  test("at the cap it is read as JSON; one byte over it is 413 naming its size and the cap", async () => {
    expect(await readJsonBody(inHand('{"prompt":"abc"}'), caps, logger, "/v1/completions")).toEqual({ json: { prompt: "abc" } });
    expect(await errorOf(await readJsonBody(inHand('{"prompt":"abcd"}'), caps, logger, "/v1/completions"))).toEqual([413, "request body of 17 bytes exceeds the limit of 16 bytes (--max-request-bytes)"]);
  });

  test("its size is counted in bytes, not characters, and bad JSON is a 400", async () => {
    expect(await errorOf(await readJsonBody(inHand('{"p":"éééééé"}'), caps, logger, "/v1/completions"))).toEqual([413, "request body of 20 bytes exceeds the limit of 16 bytes (--max-request-bytes)"]);
    expect((await errorOf(await readJsonBody(inHand("{nope"), caps, logger, "/v1/completions")))[0]).toBe(400);
  });
});

describe("a body still arriving", () => {
  test("read within the cap, and cut off with 413 past it", async () => {
    expect(await readJsonBody(arriving('{"prompt"', ':"a"}'), caps, logger, "/v1/completions")).toEqual({ json: { prompt: "a" } });
    expect((await errorOf(await readJsonBody(arriving('{"prompt":', '"abcdefghij"}'), caps, logger, "/v1/completions")))[0]).toBe(413);
  });

  test("one that stops arriving gets 408 with connection: close once the deadline passes", async () => {
    const stalled = new ServerRequest("POST", "http://f/v1/completions", ["host", "f", "content-length", "10"], new ReadableStream({ start() {} }));
    const out = await readJsonBody(stalled, caps, logger, "/v1/completions");
    expect((await errorOf(out))[0]).toBe(408);
    expect((out as Response).headers.get("connection")).toBe("close");
  });
});
