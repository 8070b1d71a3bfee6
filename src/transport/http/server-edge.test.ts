// serveHttp's edges on the wire: malformed requests (400 then close), an app that throws, HEAD,
// Expect: 100-continue, an answer before the body was read, a body streamed to a slow reader, a
// response stream that fails (cut), and stop() with and without closing active connections.
import { describe, expect, test } from "bun:test";
import type { Logger } from "../../lib/logger.ts";
import { cleanupList, waitFor } from "../../../test/harness.ts";
import { RawHttpClient, rawServerKit } from "../../../test/raw-http.ts";
import { serveHttp } from "./server.ts";

const cleanups = cleanupList();

const { serve, open } = rawServerKit(cleanups);
const echoPath = (req: Request) => new Response(new URL(req.url).pathname);

describe("the server's own answers", () => {
  const cases: [string, string, number, RegExp][] = [
    ["garbage", "GARBAGE\r\n\r\n", 400, /malformed request line/],
    ["HTTP/1.1 without Host", "GET / HTTP/1.1\r\n\r\n", 400, /without a Host header/],
    ["a request target that is not a path", "GET * HTTP/1.1\r\nhost: a\r\n\r\n", 400, /must be a path or an absolute http URL/],
    ["an unsupported transfer coding", "POST / HTTP/1.1\r\nhost: a\r\ntransfer-encoding: gzip, chunked\r\n\r\n", 501, /not supported/],
    ["a head too large", `GET / HTTP/1.1\r\nhost: a\r\nx: ${"y".repeat(20_000)}\r\n\r\n`, 431, /exceeds 16384 bytes/],
  ];
  for (const [name, bytes, status, message] of cases) {
    test(`${name}: ${status} in the OpenAI error shape, then the connection closes`, async () => {
      const c = await open(serve(echoPath));
      c.write(bytes);
      await c.waitForClose();
      const [res] = c.responses;
      expect(res!.status).toBe(status);
      expect(res!.headers.get("connection")).toBe("close");
      expect(JSON.parse(res!.body).error.message).toMatch(message);
    });
  }

  test("an app that throws, rejects or returns no Response: 500 in the OpenAI shape, and the connection stays", async () => {
    const server = serve((req) => {
      const path = new URL(req.url).pathname;
      if (path === "/throw") throw new Error("boom");
      if (path === "/reject") return Promise.reject(new Error("async boom"));
      return undefined as unknown as Response;
    });
    const c = await open(server);
    c.write("GET /throw HTTP/1.1\r\nhost: a\r\n\r\nGET /reject HTTP/1.1\r\nhost: a\r\n\r\nGET /none HTTP/1.1\r\nhost: a\r\n\r\n");
    const rs = await c.waitForResponses(3);
    expect(rs.map((r) => [r.status, JSON.parse(r.body).error.message])).toEqual([
      [500, "internal error: boom"],
      [500, "internal error: async boom"],
      [500, "internal error: the handler returned undefined, not a Response"],
    ]);
    expect(c.closed).toBe(false);
  });

  test("a fault of the server's own is reported and closes only the connection it happened on", async () => {
    const reported: string[] = [];
    const logger = { error: (text: string) => reported.push(text) } as unknown as Logger;
    const server = serve((req) => {
      const res = new Response("x");
      // A Response whose head cannot be read: the writer fails, as a bug of ours would.
      if (new URL(req.url).pathname === "/broken") Object.defineProperty(res, "headers", { get: () => { throw new Error("no headers today"); } });
      return res;
    }, { logger });
    const broken = await open(server);
    broken.write("GET /broken HTTP/1.1\r\nhost: a\r\n\r\n");
    await broken.waitForClose();
    expect(reported).toHaveLength(1);
    expect(reported[0]).toMatch(/^HTTP server: closing a connection after an internal error: Error: no headers today/);
    const fine = await open(server);
    fine.write("GET /fine HTTP/1.1\r\nhost: a\r\n\r\n");
    expect((await fine.waitForResponses(1))[0]!.body).toBe("x");
  });

  test("an absolute-form target is the URL the app sees", async () => {
    const c = await open(serve((req) => new Response(req.url)));
    c.write("GET http://example.test:81/p?q=1 HTTP/1.1\r\nhost: other\r\n\r\n");
    expect((await c.waitForResponses(1))[0]!.body).toBe("http://example.test:81/p?q=1");
  });
});

describe("answers", () => {
  test("HEAD: the head a GET would get (its Content-Length), no body; the next request follows", async () => {
    const c = await open(serve(() => Response.json({ hello: "world" })));
    c.write("HEAD / HTTP/1.1\r\nhost: a\r\n\r\n");
    await waitFor(() => c.text.includes("\r\n\r\n"), { what: "the head" });
    c.write("GET / HTTP/1.1\r\nhost: a\r\n\r\n");
    await waitFor(() => c.text.endsWith('{"hello":"world"}'), { what: "the GET's body" });
    const [head, get] = c.text.split(/(?=HTTP\/1\.1 )/);
    expect(head).toMatch(/^HTTP\/1\.1 200 OK\r\n[^]*content-length: 17\r\n\r\n$/);
    expect(get).toMatch(/content-length: 17\r\n\r\n\{"hello":"world"\}$/);
  });

  test("a Date field like Bun's (IMF-fixdate), and the app's framing fields replaced by the server's", async () => {
    const c = await open(serve(() => new Response("abc", { headers: { "content-length": "999", "transfer-encoding": "gzip", "x-own": "kept" } })));
    c.write("GET / HTTP/1.1\r\nhost: a\r\n\r\n");
    const [res] = await c.waitForResponses(1);
    expect(res!.headers.get("date")).toMatch(/^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d\d (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{4} \d\d:\d\d:\d\d GMT$/);
    expect([res!.headers.get("content-length"), res!.headers.get("transfer-encoding"), res!.headers.get("x-own"), res!.body]).toEqual(["3", undefined, "kept", "abc"]);
  });

  test("a 204 has no body and no length; an empty body has Content-Length: 0", async () => {
    const c = await open(serve((req) => (new URL(req.url).pathname === "/none" ? new Response(null, { status: 204 }) : new Response(""))));
    c.write("GET /none HTTP/1.1\r\nhost: a\r\n\r\nGET /empty HTTP/1.1\r\nhost: a\r\n\r\n");
    const rs = await c.waitForResponses(2);
    expect(rs.map((r) => [r.status, r.headers.get("content-length"), r.body])).toEqual([[204, undefined, ""], [200, "0", ""]]);
  });

  /** A stream of `parts` chunks, one per turn, failing with "worker died" after `failAfter` of them. */
  const turnStream = (parts: number, failAfter = Infinity) => {
    let sent = 0;
    return new ReadableStream({
      async pull(ctl) {
        await Bun.sleep(0);
        if (sent === failAfter) throw new Error("worker died");
        ctl.enqueue(new TextEncoder().encode("part;"));
        if (++sent === parts) ctl.close();
      },
    });
  };

  test("a streamed type (SSE, NDJSON) that fails mid-way ends the connection without the last chunk; one failing before a byte went out drops it", async () => {
    const failsAtOnce = () => new ReadableStream({ pull() { throw new Error("worker died"); } });
    const server = serve((req) => new Response(new URL(req.url).pathname === "/early" ? failsAtOnce() : turnStream(10, 2), { headers: { "content-type": "application/x-ndjson" } }));
    const c = await open(server);
    c.write("GET / HTTP/1.1\r\nhost: a\r\n\r\n");
    await c.waitForClose();
    expect(c.text).toMatch(/transfer-encoding: chunked\r\n\r\n5\r\npart;\r\n5\r\npart;\r\n$/);
    const early = await open(server);
    early.write("GET /early HTTP/1.1\r\nhost: a\r\n\r\n");
    await early.waitForClose();
    expect(early.receivedBytes).toBe(0);
  });

  test("a stream whose first chunks and failure come at once sends those chunks before it ends the connection", async () => {
    const enc = new TextEncoder();
    // Two chunks then the failure, each within a microtask: all of it reaches the writer before its first send.
    const burst = () => {
      let n = 0;
      return new ReadableStream({
        pull(ctl) {
          if (n++ < 2) ctl.enqueue(enc.encode("part;"));
          else throw new Error("worker died");
        },
      });
    };
    const c = await open(serve(() => new Response(burst(), { headers: { "content-type": "application/x-ndjson" } })));
    c.write("GET / HTTP/1.1\r\nhost: a\r\n\r\n");
    await c.waitForClose();
    expect(c.text).toMatch(/transfer-encoding: chunked\r\n\r\n5\r\npart;\r\n5\r\npart;\r\n$/);
  });

  test("an HTTP/1.0 stream that fails mid-way is reset, as an orderly close would look complete", async () => {
    const c = await open(serve(() => new Response(turnStream(10, 2), { headers: { "content-type": "text/event-stream" } })));
    let reset = false;
    c.onError((err) => (reset = (err as NodeJS.ErrnoException).code === "ECONNRESET"));
    c.write("GET / HTTP/1.0\r\n\r\n");
    await c.waitForClose();
    expect(c.text).toEndWith("part;part;");
    expect(reset).toBe(true);
  });

  test("a streamed type held in memory goes with a Content-Length; a stream's chunk goes out before the next is produced", async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const server = serve((req) => {
      if (new URL(req.url).pathname === "/whole") return new Response('{"token_id":1}\n', { headers: { "content-type": "application/x-ndjson" } });
      let sent = 0;
      const body = new ReadableStream({
        async pull(ctl) {
          if (sent === 1) await gate; // the second chunk waits for the client to have the first
          ctl.enqueue(new TextEncoder().encode(`data: ${sent}\n\n`));
          if (++sent === 2) ctl.close();
        },
      });
      return new Response(body, { headers: { "content-type": "text/event-stream" } });
    });
    const c = await open(server);
    c.write("GET /whole HTTP/1.1\r\nhost: a\r\n\r\nGET /sse HTTP/1.1\r\nhost: a\r\n\r\n");
    await waitFor(() => c.text.includes("data: 0\n\n"), { what: "the first chunk, sent before the second exists" });
    release();
    const [whole, sse] = await c.waitForResponses(2);
    expect([whole!.headers.get("content-length"), whole!.body]).toEqual(["15", '{"token_id":1}\n']);
    expect([sse!.headers.get("transfer-encoding"), sse!.body]).toEqual(["chunked", "data: 0\n\ndata: 1\n\n"]);
  });

  test("any other type, or a streamed type whose length the app declares, is read whole with its true Content-Length; one that fails drops the connection", async () => {
    const c = await open(serve((req) => {
      const path = new URL(req.url).pathname;
      if (path === "/declared") return new Response(turnStream(2), { headers: { "content-type": "application/x-ndjson", "content-length": "999" } });
      return new Response(turnStream(3, path === "/fails" ? 1 : Infinity), { headers: { "content-type": "application/json" } });
    }));
    c.write("GET / HTTP/1.1\r\nhost: a\r\n\r\nGET /declared HTTP/1.1\r\nhost: a\r\n\r\nGET /fails HTTP/1.1\r\nhost: a\r\n\r\n");
    await c.waitForClose();
    const [whole, declared, ...rest] = c.responses;
    expect([whole!.headers.get("content-length"), whole!.headers.get("transfer-encoding"), whole!.body]).toEqual(["15", undefined, "part;part;part;"]);
    expect([declared!.headers.get("content-length"), declared!.headers.get("transfer-encoding"), declared!.body]).toEqual(["10", undefined, "part;part;"]);
    expect(rest).toEqual([]); // the failed body: the connection dropped, not a byte of it sent
  });
});

describe("request bodies", () => {
  test("Expect: 100-continue gets its interim answer, then the final one", async () => {
    const c = await open(serve(async (req) => new Response(`got ${await req.text()}`)));
    c.write("POST / HTTP/1.1\r\nhost: a\r\nexpect: 100-continue\r\ncontent-length: 4\r\n\r\n");
    await waitFor(() => c.text === "HTTP/1.1 100 Continue\r\n\r\n", { what: "100 Continue" });
    c.write("body");
    await waitFor(() => c.text.endsWith("got body"), { what: "the final answer" });
    expect(c.text).toMatch(/^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 200 OK\r\n/);
  });

  test("a large chunked body reaches an app that reads it slowly, whole and in order", async () => {
    const piece = (i: number) => String(i % 10).repeat(64 * 1024);
    const N = 64; // 4 MiB
    let digest = "";
    let reads = 0;
    const server = serve(async (req) => {
      const reader = req.body!.getReader();
      let size = 0;
      for (let r = await reader.read(); !r.done; r = await reader.read()) {
        size += r.value.length;
        if (++reads % 8 === 0) await Bun.sleep(1); // a slow reader: the socket pauses meanwhile
        digest = String(r.value[r.value.length - 1]! - 48);
      }
      return new Response(`${size} bytes, last ${digest}`);
    });
    const c = await open(server);
    c.write("POST / HTTP/1.1\r\nhost: a\r\ntransfer-encoding: chunked\r\n\r\n");
    for (let i = 0; i < N; i++) c.write(`10000\r\n${piece(i)}\r\n`);
    c.write("0\r\n\r\n");
    const [res] = await c.waitForResponses(1);
    expect(res!.body).toBe(`${N * 64 * 1024} bytes, last ${(N - 1) % 10}`);
  });

  test("an answer before the body was read: a short rest is dropped and the connection kept, a long one closes it", async () => {
    const server = serve(echoPath);
    const short = await open(server);
    short.write("POST /early HTTP/1.1\r\nhost: a\r\ncontent-length: 10\r\n\r\nabc");
    await short.waitForResponses(1);
    short.write("defghijGET /next HTTP/1.1\r\nhost: a\r\n\r\n");
    expect((await short.waitForResponses(2)).map((r) => [r.body, r.headers.get("connection")])).toEqual([["/early", undefined], ["/next", undefined]]);
    const long = await open(server);
    long.write(`POST /early HTTP/1.1\r\nhost: a\r\ncontent-length: ${10 * 1024 * 1024}\r\n\r\nabc`);
    await long.waitForClose();
    expect(long.responses.map((r) => [r.body, r.headers.get("connection")])).toEqual([["/early", "close"]]);
  });
});

describe("stop", () => {
  test("stop(true) aborts requests in flight and closes their connections; the port is free at once", async () => {
    let aborted = false;
    let arrived = false;
    const server = serveHttp({ host: "127.0.0.1", port: 0, fetch: (req) => new Promise<Response>((resolve) => {
      arrived = true;
      req.signal.addEventListener("abort", () => ((aborted = true), resolve(new Response("late"))));
    }) });
    const c = await open(server);
    c.write("GET / HTTP/1.1\r\nhost: a\r\n\r\n");
    await waitFor(() => arrived, { what: "the request to reach the app" });
    await server.stop(true);
    expect(aborted).toBe(true);
    await c.waitForClose();
    const again = serveHttp({ host: "127.0.0.1", port: server.port, fetch: echoPath });
    await again.stop(true);
  });

  test("stop(false) stops listening at once, lets the request in flight finish, then resolves", async () => {
    let finish!: () => void;
    let arrived = false;
    const server = serveHttp({ host: "127.0.0.1", port: 0, fetch: async () => {
      arrived = true;
      await new Promise<void>((resolve) => (finish = resolve));
      return new Response("finished");
    } });
    cleanups.push(() => server.stop(true));
    const busy = await open(server);
    const idle = await open(server);
    busy.write("GET / HTTP/1.1\r\nhost: a\r\n\r\n");
    await waitFor(() => arrived, { what: "the request to reach the app" });
    let stopped = false;
    const stopping = server.stop(false).then(() => (stopped = true));
    await idle.waitForClose("the idle connection to close");
    await expect(RawHttpClient.open(server.port)).rejects.toThrow();
    expect(stopped).toBe(false);
    finish();
    const [res] = await busy.waitForResponses(1);
    expect([res!.body, res!.headers.get("connection")]).toEqual(["finished", "close"]);
    await stopping;
  });
});
