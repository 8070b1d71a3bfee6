// The keep-alive client against Bun.serve and against a scripted raw TCP server: both framings,
// connection reuse, a dead pooled connection retried only when that cannot run a request twice, aborts that close the connection (the
// server sees it), large bodies past the kernel's buffer, and clear errors for refused
// connections, malformed responses and cut-off bodies.
import { afterEach, describe, expect, test } from "bun:test";
import type { Socket, TCPSocketListener } from "bun";
import fc from "fast-check";
import { waitFor } from "../../../test/harness.ts";
import { KeepAliveClient, utf8Length } from "./keepalive-client.ts";
import { HttpConnectionError, type ClientResponse } from "./client-exchange.ts";

const cleanups: (() => void | Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

function client(opts?: ConstructorParameters<typeof KeepAliveClient>[0]): KeepAliveClient {
  const c = new KeepAliveClient(opts);
  cleanups.push(() => c.close());
  return c;
}

function serve(fetch: (req: Request) => Response | Promise<Response>) {
  const server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch });
  cleanups.push(() => server.stop(true));
  return `http://127.0.0.1:${server.port}`;
}

/** Resolves once more than the client's idle timeout has passed since the call (a connection idle since before it has expired). */
function idleTimeoutPassed(c: KeepAliveClient): Promise<boolean> {
  const from = performance.now();
  return waitFor(() => performance.now() - from > c.idleTimeoutMs, { intervalMs: 1, what: "the idle timeout to pass" });
}

async function text(res: ClientResponse): Promise<string> {
  let s = "";
  for (let c = await res.read(); c !== undefined; c = await res.read()) s += Buffer.from(c).toString();
  return s;
}

interface RawConn {
  socket: Socket<RawConn>;
  received: string;
  closed: Promise<void>;
  onClose: () => void;
}

/** A TCP server whose every request (a full head + content-length body) is answered by `respond`. */
function rawServer(respond: (conn: RawConn, request: string, n: number) => void) {
  const conns: RawConn[] = [];
  let requests = 0;
  const listener: TCPSocketListener<RawConn> = Bun.listen<RawConn>({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      open(socket) {
        let onClose!: () => void;
        const closed = new Promise<void>((r) => (onClose = r));
        socket.data = { socket, received: "", closed, onClose };
        conns.push(socket.data);
      },
      data(socket, chunk) {
        const c = socket.data;
        c.received += chunk.toString("latin1");
        for (;;) {
          const headEnd = c.received.indexOf("\r\n\r\n");
          if (headEnd < 0) return;
          const length = Number(/content-length: (\d+)/i.exec(c.received.slice(0, headEnd))?.[1] ?? 0);
          if (c.received.length < headEnd + 4 + length) return;
          const request = c.received.slice(0, headEnd + 4 + length);
          c.received = c.received.slice(request.length);
          respond(c, request, requests++);
        }
      },
      close(socket) {
        socket.data.onClose();
      },
    },
  });
  cleanups.push(() => listener.stop(true));
  return { url: `http://127.0.0.1:${listener.port}/v1/generate`, conns, requests: () => requests };
}

const ok = (body: string) => `HTTP/1.1 200 OK\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;

describe("against Bun.serve", () => {
  /** /stream answers a\nb\nc\n streamed (chunked); anything else echoes method, content type and body as JSON, 201. */
  const echoServer = () =>
    serve(async (req) => {
      const body = await req.text();
      if (new URL(req.url).pathname === "/stream") {
        const parts = ["a\n", "b\n", "c\n"];
        return new Response(new ReadableStream({ pull: (ctl) => (parts.length ? ctl.enqueue(new TextEncoder().encode(parts.shift()!)) : ctl.close()) }));
      }
      return Response.json({ method: req.method, type: req.headers.get("content-type"), body }, { status: 201 });
    });

  test("a POST with a JSON body gets its content-length answer", async () => {
    const base = echoServer();
    const c = client();
    const res = await c.request(`${base}/echo?q=1`, { method: "POST", headers: { "content-type": "application/json" }, body: '{"ü":1}' });
    expect(res.status).toBe(201);
    expect(res.headers.get("content-type")).toContain("application/json");
    expect(JSON.parse(await text(res))).toEqual({ method: "POST", type: "application/json", body: '{"ü":1}' });
  });

  test("a streamed (chunked) answer is read whole", async () => {
    const base = echoServer();
    const c = client();
    const streamed = await c.request(`${base}/stream`, { method: "POST", body: "" });
    expect(await text(streamed)).toBe("a\nb\nc\n");
  });

  test("a GET is sent as a GET", async () => {
    const base = echoServer();
    const c = client();
    const get = await c.request(`${base}/echo`, { method: "GET" });
    expect(JSON.parse(await text(get)).method).toBe("GET");
  });

  test("connections are reused: sequential requests share one, a concurrent burst opens more that the next burst reuses", async () => {
    const base = serve(() => new Response("ok"));
    const c = client();
    for (let i = 0; i < 5; i++) expect(await text(await c.request(`${base}/x`, { method: "POST", body: "{}" }))).toBe("ok");
    expect(c.connections).toBe(1);
    const burst = async () => Promise.all(Array.from({ length: 4 }, async () => text(await c.request(`${base}/x`, { method: "POST", body: "{}" }))));
    expect(await burst()).toEqual(["ok", "ok", "ok", "ok"]);
    expect(c.connections).toBe(4);
    await burst();
    expect(c.connections).toBe(4);
  });

  test("idle connections are capped in all, the rest closing when their answer ends", async () => {
    const base = serve(() => new Response("ok"));
    const c = client({ maxIdle: 2 });
    const burst = await Promise.all(Array.from({ length: 5 }, async () => text(await c.request(`${base}/x`, { method: "POST", body: "{}" }))));
    expect(burst).toEqual(["ok", "ok", "ok", "ok", "ok"]);
    expect(c.idleConnections).toBe(2);
    expect(c.connections).toBe(2);
  });

  test("idle connections are capped per origin", async () => {
    const base = serve(() => new Response("ok"));
    const perOrigin = client({ maxIdlePerOrigin: 1 });
    await Promise.all(Array.from({ length: 3 }, async () => text(await perOrigin.request(`${base}/x`, { method: "POST", body: "{}" }))));
    expect(perOrigin.connections).toBe(1);
  });

  test("connections idle past idleTimeoutMs are closed by the sweep, and not reused before it", async () => {
    const server = rawServer((conn) => conn.socket.write(ok("fine")));
    const c = client({ idleTimeoutMs: 1 });
    expect(await text(await c.request(server.url, { method: "POST", body: "{}" }))).toBe("fine");
    expect(c.idleConnections).toBe(1);
    await idleTimeoutPassed(c); // the pooled connection has expired
    expect(await text(await c.request(server.url, { method: "POST", body: "{}" }))).toBe("fine");
    expect(server.conns.length).toBe(2); // the expired one was not reused
    await server.conns[0]!.closed;
    await idleTimeoutPassed(c);
    c.closeExpired();
    expect(c.idleConnections).toBe(0);
    await server.conns[1]!.closed;
  });

  test("a body of 8 MiB (past the kernel's socket buffer) arrives whole", async () => {
    const base = serve(async (req) => new Response(String((await req.text()).length)));
    const big = JSON.stringify({ token_ids: Array.from({ length: 1_000_000 }, (_, i) => i % 50_000) });
    expect(big.length).toBeGreaterThan(5_000_000);
    const res = await client().request(`${base}/x`, { method: "POST", body: big });
    expect(await text(res)).toBe(String(big.length));
  });
});

describe("connection handling (scripted server)", () => {
  test("a pooled connection the server already dropped (the write sends nothing) is retried on a new one", async () => {
    let last: Socket<RawConn> | undefined;
    const server = rawServer((conn, _req, n) => {
      last = conn.socket;
      conn.socket.write(ok(`answer ${n}`));
    });
    const c = client();
    expect(await text(await c.request(server.url, { method: "POST", body: "{}" }))).toBe("answer 0");
    last!.terminate(); // reset at once: the client reuses the connection before it hears of it
    expect(await text(await c.request(server.url, { method: "POST", body: "{}" }))).toBe("answer 1");
    expect(server.conns.length).toBe(2);
  });

  test("a POST the server received is not sent again when it closes without answering: the error says so", async () => {
    const server = rawServer((conn, _req, n) => {
      if (n === 1) conn.socket.end();
      else conn.socket.write(ok(`answer ${n}`));
    });
    const c = client();
    expect(await text(await c.request(server.url, { method: "POST", body: '{"id":"a"}' }))).toBe("answer 0");
    const err = await c.request(server.url, { method: "POST", body: '{"id":"b"}' }).then(() => undefined, (e: Error) => e);
    expect(err).toBeInstanceOf(HttpConnectionError);
    expect(err!.message).toContain("closed before any answer");
    expect(err!.message).toContain("not sent again");
    expect(server.requests()).toBe(2);
  });

  test("a GET on a reused connection closed before any answer byte is sent once more (idempotent)", async () => {
    const server = rawServer((conn, _req, n) => {
      if (n === 1) conn.socket.end();
      else conn.socket.write(ok(`answer ${n}`));
    });
    const c = client();
    expect(await text(await c.request(server.url, { method: "GET" }))).toBe("answer 0");
    expect(await text(await c.request(server.url, { method: "GET" }))).toBe("answer 2");
    expect(server.requests()).toBe(3);
  });

  test("a chunked answer arrives chunk by chunk, before it ends", async () => {
    let conn!: RawConn;
    const server = rawServer((c) => {
      conn = c;
      c.socket.write("HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n3\r\none\r\n");
    });
    const res = await client().request(server.url, { method: "POST", body: "{}" });
    expect(Buffer.from((await res.read())!).toString()).toBe("one");
    conn.socket.write("3\r\ntwo\r\n0\r\n\r\n");
    expect(Buffer.from((await res.read())!).toString()).toBe("two");
    expect(await res.read()).toBeUndefined();
  });

  test("`connection: close` answers are not reused", async () => {
    const server = rawServer((conn) => conn.socket.write("HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 2\r\n\r\nok"));
    const c = client();
    for (let i = 0; i < 3; i++) expect(await text(await c.request(server.url, { method: "POST", body: "{}" }))).toBe("ok");
    expect(server.conns.length).toBe(3);
  });

  test("abort mid-response: read() rejects with the reason and the server sees the connection close", async () => {
    const server = rawServer((conn) => conn.socket.write("HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n2\r\nab\r\n"));
    const ctrl = new AbortController();
    const res = await client().request(server.url, { method: "POST", body: "{}", signal: ctrl.signal });
    expect(Buffer.from((await res.read())!).toString()).toBe("ab");
    const pending = res.read();
    ctrl.abort(new Error("client went away"));
    expect(pending).rejects.toThrow("client went away");
    await server.conns[0]!.closed;
  });

  test("an abort before the answer's head rejects the request promise", async () => {
    const server = rawServer(() => {});
    const c = client();
    const ctrl = new AbortController();
    const p = c.request(server.url, { method: "POST", body: "{}", signal: ctrl.signal });
    ctrl.abort(new Error("stalled"));
    expect(p).rejects.toThrow("stalled");
  });

  test("an already aborted signal sends nothing", async () => {
    const seen: string[] = [];
    const server = rawServer((conn, request) => {
      seen.push(request.slice(request.indexOf("\r\n\r\n") + 4));
      conn.socket.write(ok("done"));
    });
    const c = client();
    await expect(c.request(server.url, { method: "POST", body: "first", signal: AbortSignal.abort(new Error("already")) })).rejects.toThrow("already");
    // A request sent after it is the first the server sees, on the one connection opened.
    expect(await text(await c.request(server.url, { method: "POST", body: "second" }))).toBe("done");
    expect(seen).toEqual(["second"]);
    expect(server.conns).toHaveLength(1);
  });

  test("cancel() of an unfinished answer closes its connection", async () => {
    const server = rawServer((conn) => conn.socket.write("HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\npartial"));
    const res = await client().request(server.url, { method: "POST", body: "{}" });
    await res.read();
    res.cancel();
    await server.conns[0]!.closed;
  });

  test("errors name the problem: refused, malformed, cut off, closed client", async () => {
    const held = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
    const port = held.port;
    held.stop(true);
    const c = client();
    expect(c.request(`http://127.0.0.1:${port}/v1/generate`, { method: "POST", body: "{}" })).rejects.toThrow(new RegExp(`cannot connect to 127\\.0\\.0\\.1:${port}`));

    const garbage = rawServer((conn) => conn.socket.write("SSH-2.0-OpenSSH_9\r\n\r\n"));
    const bad = c.request(garbage.url, { method: "POST", body: "{}" });
    expect(bad).rejects.toThrow(/bad response from 127\.0\.0\.1:\d+: not an HTTP\/1\.x status line/);
    expect(bad).rejects.toBeInstanceOf(HttpConnectionError);

    const cut = rawServer((conn) => {
      conn.socket.write("HTTP/1.1 200 OK\r\ncontent-length: 50\r\n\r\nonly this");
      conn.socket.end();
    });
    const res = await c.request(cut.url, { method: "POST", body: "{}" });
    expect(text(res)).rejects.toThrow(/closed in the middle of the response/);

    const silent = rawServer(() => {});
    const inflight = c.request(silent.url, { method: "POST", body: "{}" });
    await Promise.resolve();
    c.close();
    expect(inflight).rejects.toThrow("the HTTP client closed");
    expect(c.request(silent.url, { method: "POST", body: "{}" })).rejects.toThrow("the HTTP client is closed");
  });

  test("content-length counts UTF-8 bytes of any string (lone surrogates become 3-byte U+FFFD)", () => {
    fc.assert(fc.property(fc.string({ unit: "binary" }), (s) => utf8Length(s) === Buffer.byteLength(s)), { numRuns: 2000 });
    for (const s of ["", "ascii", "ü", "€", "😀", "\ud800", "\udc00x", "a\ud83d\ude00b"]) expect(utf8Length(s)).toBe(Buffer.byteLength(s));
  });

  test("only http: URLs", () => {
    expect(KeepAliveClient.supports("https://x/v1/generate")).toBe(false);
    expect(() => client().request("https://x/v1/generate", { method: "POST" })).toThrow("only http: URLs");
  });
});
