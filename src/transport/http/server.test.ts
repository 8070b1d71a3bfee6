// serveHttp on the wire, with raw sockets: HTTP/1.0 without Host, pipelined requests answered in
// order while their handlers await, a client that leaves aborting its request, an SSE answer read
// slowly (back-pressure), body limits, the idle timeout and Connection: close.
import { describe, expect, test } from "bun:test";
import { cleanupList, waitFor } from "../../../test/harness.ts";
import { rawServerKit } from "../../../test/raw-http.ts";
import { serveHttp } from "./server.ts";

const cleanups = cleanupList();

const { serve, open } = rawServerKit(cleanups);
const SSE = { "content-type": "text/event-stream" };
const nextTurn = () => new Promise((resolve) => setTimeout(resolve, 1));
const post = (path: string, body: string, extra = "") => `POST ${path} HTTP/1.1\r\nhost: test\r\ncontent-length: ${Buffer.byteLength(body)}\r\n${extra}\r\n${body}`;

test("a port in use is a clear error naming host and port", async () => {
  const first = serve(() => new Response("ok"));
  expect(await (await fetch(`${first.url}/`)).text()).toBe("ok");
  expect(() => serveHttp({ host: "127.0.0.1", port: first.port, fetch: () => new Response("no") })).toThrow(`cannot serve HTTP on 127.0.0.1:${first.port}`);
});

describe("HTTP/1.0 without Host", () => {
  test("is answered, the app seeing an absolute URL on the listening address, and the connection closes", async () => {
    const server = serve((req) => Response.json({ url: req.url, path: new URL(req.url).pathname, host: req.headers.get("host") }));
    const c = await open(server);
    c.write("GET /health?deep=1 HTTP/1.0\r\n\r\n");
    await c.waitForClose();
    const [res] = c.responses;
    expect(res!.status).toBe(200);
    expect(res!.headers.get("connection")).toBe("close");
    expect(JSON.parse(res!.body)).toEqual({ url: `http://127.0.0.1:${server.port}/health?deep=1`, path: "/health", host: null });
  });

  test("kept alive when it asks, with a Content-Length and Connection: keep-alive", async () => {
    const server = serve((req) => new Response(new URL(req.url).pathname));
    const c = await open(server);
    c.write("GET /a HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
    const [a] = await c.waitForResponses(1);
    expect([a!.body, a!.headers.get("connection"), a!.headers.get("content-length")]).toEqual(["/a", "keep-alive", "2"]);
    c.write("GET /bb HTTP/1.0\r\n\r\n");
    await c.waitForClose();
    expect(c.responses.map((r) => r.body)).toEqual(["/a", "/bb"]);
  });

  test("a streamed answer to HTTP/1.0 runs until the connection closes (no chunking)", async () => {
    const server = serve(() => new Response(new ReadableStream({ async pull(c) { await nextTurn(); c.enqueue(new TextEncoder().encode("data: x\n\n")); c.close(); } }), { headers: SSE }));
    const c = await open(server);
    c.write("GET /sse HTTP/1.0\r\n\r\n");
    await c.waitForClose();
    expect(c.text).toMatch(/^HTTP\/1\.1 200 OK\r\n[^]*connection: close\r\n\r\ndata: x\n\n$/);
    expect(c.text).not.toContain("transfer-encoding");
  });
});

describe("pipelining", () => {
  /** Awaits a timer before reading its body (what made Bun.serve drop the second request), slower for the first. */
  const slowEcho = async (req: Request) => {
    const path = new URL(req.url).pathname;
    await new Promise((resolve) => setTimeout(resolve, path === "/first" ? 30 : 1));
    return new Response(`${path}:${await req.text()}`);
  };

  test("two POSTs in one write are answered in order although their handlers await", async () => {
    const c = await open(serve(slowEcho));
    c.write(post("/first", "one") + post("/second", "two"));
    const rs = await c.waitForResponses(2);
    expect(rs.map((r) => [r.status, r.body])).toEqual([[200, "/first:one"], [200, "/second:two"]]);
    expect(c.closed).toBe(false);
  });

  test("a GET after a POST, and a third request split across writes", async () => {
    const c = await open(serve(slowEcho));
    c.write(`${post("/first", "body")}GET /get HTTP/1.1\r\nhost: test\r\n\r\nPOST /third HTTP/1.1\r\nhost: test\r\ncontent-len`);
    c.write("gth: 1\r\n\r\nz");
    const rs = await c.waitForResponses(3);
    expect(rs.map((r) => r.body)).toEqual(["/first:body", "/get:", "/third:z"]);
  });

  test("many pipelined requests past the held-bytes bound are all answered, in order", async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let handled = 0;
    const server = serve(async (req) => {
      if (handled++ === 0) await gate;
      return new Response(new URL(req.url).pathname);
    });
    const c = await open(server);
    const n = 3000; // ≈ 150 KB of requests: more than the server holds before it stops reading
    c.write(Array.from({ length: n }, (_, i) => `GET /r${i} HTTP/1.1\r\nhost: test\r\nx-pad: ${"p".repeat(10)}\r\n\r\n`).join(""));
    await waitFor(() => handled === 1, { what: "the first request to reach the app" });
    expect(handled).toBe(1); // the rest wait for its answer
    release();
    const rs = await waitFor(() => (c.responses.length === n ? c.responses : undefined), { what: `${n} answers`, timeoutMs: 10_000 });
    expect(rs.every((r, i) => r.body === `/r${i}`)).toBe(true);
  });
});

describe("a client that leaves", () => {
  test("aborts the request's signal and fails a body still arriving", async () => {
    const seen: string[] = [];
    let arrived = false;
    const server = serve(async (req) => {
      arrived = true;
      req.signal.addEventListener("abort", () => seen.push("aborted"));
      try {
        await req.text();
      } catch (err) {
        seen.push(`body failed: ${(err as Error).message}`);
      }
      return new Response("late");
    });
    const c = await open(server);
    c.write("POST /x HTTP/1.1\r\nhost: test\r\ncontent-length: 100\r\n\r\npartial");
    await waitFor(() => arrived, { what: "the request to reach the app" });
    c.destroy();
    await waitFor(() => seen.length === 2, { what: "the abort and the body's failure" });
    expect(seen.sort()).toEqual(["aborted", "body failed: the client closed the connection before its request body arrived in full"]);
  });

  test("mid-answer: the signal aborts and the response stream is cancelled", async () => {
    let cancelled = false;
    let aborted = false;
    const server = serve((req) => {
      req.signal.addEventListener("abort", () => (aborted = true));
      return new Response(new ReadableStream({ async pull(c) { await nextTurn(); c.enqueue(new Uint8Array(10)); }, cancel: () => void (cancelled = true) }), { headers: SSE });
    });
    const c = await open(server);
    c.write("GET /stream HTTP/1.1\r\nhost: test\r\n\r\n");
    await waitFor(() => c.receivedBytes > 100, { what: "some of the stream" });
    c.destroy();
    await waitFor(() => aborted && cancelled, { what: "abort and cancel" });
  });
});

test("an SSE answer read slowly: the stream is read no faster than the client takes it, then arrives whole", async () => {
  const CHUNK = 256 * 1024;
  const TOTAL_CHUNKS = 256; // 64 MiB: far more than the kernel's socket buffers
  let pulled = 0;
  const server = serve(() => new Response(new ReadableStream({ pull(c) { c.enqueue(new Uint8Array(CHUNK).fill(97)); if (++pulled === TOTAL_CHUNKS) c.close(); } }), { headers: { "content-type": "text/event-stream" } }));
  const c = await open(server);
  c.pause();
  c.write("GET /sse HTTP/1.1\r\nhost: test\r\n\r\n");
  // The server fills the socket's buffers, then waits for them to drain: the stream stops being pulled.
  let last = -1;
  await waitFor(() => {
    const still = pulled > 0 && pulled === last;
    last = pulled;
    return still;
  }, { what: "pulling to stop while the client does not read", intervalMs: 100, timeoutMs: 10_000 });
  expect(pulled).toBeLessThan(TOTAL_CHUNKS / 2);
  c.resume();
  await waitFor(() => c.endsWith("0\r\n\r\n"), { what: "the whole stream", timeoutMs: 15_000 });
  expect(pulled).toBe(TOTAL_CHUNKS);
  const [res] = c.responses;
  expect(res!.headers.get("transfer-encoding")).toBe("chunked");
  expect(res!.body.length).toBe(CHUNK * TOTAL_CHUNKS);
}, 30_000);

describe("limits", () => {
  test("a declared body over maxRequestBodySize: 413 in the OpenAI error shape, unread, and the connection closes", async () => {
    let calls = 0;
    const c = await open(serve(() => (calls++, new Response("no")), { maxRequestBodySize: 100 }));
    c.write("POST /x HTTP/1.1\r\nhost: test\r\ncontent-length: 1000\r\n\r\n");
    await c.waitForClose();
    const [res] = c.responses;
    expect(res!.status).toBe(413);
    expect(JSON.parse(res!.body).error.message).toBe("a request body of 1000 bytes exceeds the limit of 100 bytes");
    expect(calls).toBe(0);
  });

  test("a chunked body that grows past it: 413, the app's signal aborted and its body read failing", async () => {
    const seen: string[] = [];
    let arrived = false;
    const server = serve(async (req) => {
      arrived = true;
      req.signal.addEventListener("abort", () => seen.push("aborted"));
      await req.text().catch((err: Error) => seen.push(err.message));
      return new Response("never sent");
    }, { maxRequestBodySize: 100 });
    const c = await open(server);
    c.write("POST /x HTTP/1.1\r\nhost: test\r\ntransfer-encoding: chunked\r\n\r\n40\r\n" + "a".repeat(64) + "\r\n");
    await waitFor(() => arrived, { what: "the request to reach the app" });
    c.write("40\r\n");
    await c.waitForClose();
    expect(c.responses.map((r) => r.status)).toEqual([413]);
    await waitFor(() => seen.length === 2, { what: "abort and body failure" });
    expect(seen.sort()).toEqual(["aborted", "the request body exceeds 100 bytes"]);
  });
});

describe("connection lifetime", () => {
  test("an idle connection is closed after idleTimeoutS; one whose answer the app is still working on is not", async () => {
    let finish!: () => void;
    const slow = new Promise<void>((resolve) => (finish = resolve));
    const server = serve(async (req) => {
      if (new URL(req.url).pathname === "/slow") await slow;
      return new Response("done");
    }, { idleTimeoutS: 0.2 });
    const idle = await open(server);
    const busy = await open(server);
    busy.write("GET /slow HTTP/1.1\r\nhost: test\r\n\r\n");
    await idle.waitForClose("the idle connection to be closed");
    expect(busy.closed).toBe(false);
    finish();
    const [res] = await busy.waitForResponses(1);
    expect(res!.body).toBe("done");
    await busy.waitForClose("the connection, idle again, to be closed");
  });

  test("Connection: close from the client, or from the app's answer, closes after the answer", async () => {
    const server = serve((req) => new Response("bye", { headers: new URL(req.url).pathname === "/app-closes" ? { connection: "close" } : {} }));
    const a = await open(server);
    a.write("GET / HTTP/1.1\r\nhost: test\r\nconnection: close\r\n\r\nGET /never HTTP/1.1\r\nhost: test\r\n\r\n");
    await a.waitForClose();
    expect(a.responses.map((r) => [r.body, r.headers.get("connection")])).toEqual([["bye", "close"]]);
    const b = await open(server);
    b.write("GET /app-closes HTTP/1.1\r\nhost: test\r\n\r\n");
    await b.waitForClose();
    expect(b.responses.map((r) => r.headers.get("connection"))).toEqual(["close"]);
  });
});
